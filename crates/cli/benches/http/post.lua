-- wrk's requests for the HTTP benchmark (benches/http/main.rs): POST /v1/jobs with the
-- same intent, and an Idempotency-Key that is new on every request ("fresh": PREFIX-THREAD-N)
-- or the same on every request ("one": PREFIX). At the end it prints one line of JSON with
-- what the benchmark reads.
-- Arguments: TOKEN PREFIX fresh|one INTENT

local threads = 0

function setup(thread)
  thread:set("thread_id", threads)
  threads = threads + 1
end

function init(args)
  prefix = args[2]
  one_key = args[3] == "one"
  counter = 0
  wrk.method = "POST"
  wrk.path = "/v1/jobs"
  wrk.body = args[4]
  wrk.headers["Authorization"] = "Bearer " .. args[1]
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  -- Built per request in both modes, so the client does the same work for each.
  local key = prefix
  if not one_key then
    key = prefix .. "-" .. thread_id .. "-" .. counter
  end
  wrk.headers["Idempotency-Key"] = key
  return wrk.format()
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "errors": {"connect": %d, "read": %d, "write": %d, '
      .. '"status": %d, "timeout": %d}, "p50_us": %d, "p99_us": %d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
