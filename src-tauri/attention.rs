//! Which jobs newly need a person (SPEC §13 "Attention"): an attempt of a job became
//! `unknown`, or a late answer was flagged for review. Pure, so the rule is tested apart from
//! notifications and windows.

use std::collections::{HashMap, HashSet};

use onejob_engine::{AttemptState, Job, JobDetail};

/// Why a person is told about a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The job is `unknown`: its open attempt's outcome is not known.
    Unknown,
    /// A late answer (or a contradiction) was flagged for review.
    Flagged,
}

/// One job that newly needs a person: the job, the attempt it is about, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub job_id: String,
    /// The attempt that is `unknown` or flagged; empty for a job flagged as a whole.
    pub attempt_id: String,
    /// Its number within the job (0 for a job flagged as a whole).
    pub attempt_number: u32,
    pub reason: Reason,
}

/// At most this many notices of one batch are shown one by one; more become one notification.
pub const APART: usize = 3;

/// One desktop notification to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Announcement {
    /// One job, which a click opens.
    One(Notice),
    /// A burst: this many jobs at once, counted in one notification.
    Many(usize),
}

impl Announcement {
    /// The job a click on the notification opens, if it names one.
    pub fn job_id(&self) -> Option<&str> {
        match self {
            Announcement::One(notice) => Some(&notice.job_id),
            Announcement::Many(_) => None,
        }
    }

    /// The notification's title.
    pub fn title(&self) -> String {
        match self {
            Announcement::One(n) if n.reason == Reason::Unknown => "A job needs a person".into(),
            Announcement::One(_) => "A late answer needs a look".into(),
            Announcement::Many(n) => format!("{n} jobs need you"),
        }
    }

    /// The notification's text, in SPEC words.
    pub fn body(&self) -> String {
        match self {
            Announcement::One(n) if n.reason == Reason::Unknown => {
                format!(
                    "Job {} is unknown (attempt {}): a person must decide",
                    n.job_id, n.attempt_number
                )
            }
            Announcement::One(n) => {
                format!("A late answer for job {} was flagged for review", n.job_id)
            }
            Announcement::Many(n) => format!(
                "{n} jobs became unknown or had a late answer flagged for review; \
                 \"needs attention\" lists them"
            ),
        }
    }
}

/// The notifications for one batch of notices: one each for a few, one in all for a burst.
pub fn announcements(news: Vec<Notice>) -> Vec<Announcement> {
    if news.len() > APART {
        vec![Announcement::Many(news.len())]
    } else {
        news.into_iter().map(Announcement::One).collect()
    }
}

/// What a person has been told (or what needed attention before the app started): each
/// (job, attempt, reason) once, so a job that becomes `unknown` again with a new attempt is
/// told again.
#[derive(Debug, Default)]
pub struct Seen {
    told: HashSet<(String, String, Reason)>,
    /// Each attention job's `updated_at` when its attempts were last read.
    looked: HashMap<String, String>,
}

impl Seen {
    /// Remembers every attempt that already needs attention, so none of them is announced.
    pub fn starting_with(details: &[JobDetail]) -> Seen {
        let mut seen = Seen::default();
        let _ = seen.news(details);
        seen
    }

    /// The jobs of `jobs` that changed since their attempts were last read: only these can
    /// bring news, so only their details need reading.
    pub fn to_look_at<'a>(&self, jobs: &'a [Job]) -> Vec<&'a Job> {
        jobs.iter()
            .filter(|job| self.looked.get(&job.id) != Some(&job.updated_at))
            .collect()
    }

    /// The notices for attempts in `details` that newly need attention, in the order given;
    /// they are remembered, so the same job, attempt and reason never come back.
    pub fn news(&mut self, details: &[JobDetail]) -> Vec<Notice> {
        let mut out = Vec::new();
        for detail in details {
            let job = &detail.job;
            self.looked.insert(job.id.clone(), job.updated_at.clone());
            for (attempt_id, attempt_number, reason) in reasons(detail) {
                if self
                    .told
                    .insert((job.id.clone(), attempt_id.clone(), reason))
                {
                    out.push(Notice {
                        job_id: job.id.clone(),
                        attempt_id,
                        attempt_number,
                        reason,
                    });
                }
            }
        }
        out
    }
}

/// Why a job needs attention now, per attempt, `unknown` first.
fn reasons(detail: &JobDetail) -> Vec<(String, u32, Reason)> {
    let attempts = &detail.attempts;
    let unknown = attempts
        .iter()
        .filter(|a| a.state == AttemptState::Unknown)
        .map(|a| (a.id.clone(), a.number, Reason::Unknown));
    let flagged: Vec<_> = attempts
        .iter()
        .filter(|a| a.flagged_for_review)
        .map(|a| (a.id.clone(), a.number, Reason::Flagged))
        .collect();
    // A job flagged with no attempt flagged is told about as a whole.
    let whole = (detail.job.flagged_for_review && flagged.is_empty())
        .then(|| (String::new(), 0, Reason::Flagged));
    unknown.chain(flagged).chain(whole).collect()
}

#[cfg(test)]
mod tests {
    use onejob_engine::{Attempt, JobStatus};

    use super::*;

    fn job(id: &str, status: JobStatus, flagged: bool, updated_at: &str) -> Job {
        Job {
            id: id.to_owned(),
            owner_id: "local".to_owned(),
            idempotency_key: format!("key-{id}"),
            fingerprint: "0".repeat(64),
            intent: serde_json::json!({"route": ["sandbox"], "input": {}}),
            status,
            version: 0,
            completed_by: None,
            result: None,
            error: None,
            flagged_for_review: flagged,
            created_at: String::new(),
            updated_at: updated_at.to_owned(),
            finished_at: None,
            not_before: None,
        }
    }

    fn attempt(id: &str, job_id: &str, state: AttemptState, flagged: bool) -> Attempt {
        Attempt {
            id: id.to_owned(),
            job_id: job_id.to_owned(),
            number: 1,
            provider: "sandbox".to_owned(),
            state,
            job_version: 0,
            request_id: None,
            http_status: None,
            error: None,
            executor_id: None,
            lease_expires_at: None,
            flagged_for_review: flagged,
            created_at: String::new(),
            sent_at: None,
            finished_at: None,
            usage: None,
            cost: None,
        }
    }

    /// A job with its attempts, as `Engine::job` gives it.
    fn detail(job: Job, attempts: Vec<Attempt>) -> JobDetail {
        JobDetail {
            job,
            attempts,
            events: Vec::new(),
            usage: None,
            cost: Vec::new(),
            known: Vec::new(),
        }
    }

    fn unknown(id: &str, attempt_id: &str) -> JobDetail {
        detail(
            job(id, JobStatus::Unknown, false, attempt_id),
            vec![attempt(attempt_id, id, AttemptState::Unknown, false)],
        )
    }

    fn ids(notices: &[Notice]) -> Vec<(&str, &str, Reason)> {
        notices
            .iter()
            .map(|n| (n.job_id.as_str(), n.attempt_id.as_str(), n.reason))
            .collect()
    }

    #[test]
    fn jobs_that_needed_attention_at_start_are_not_announced() {
        let flagged = detail(
            job("b", JobStatus::Cancelled, true, "t"),
            vec![attempt("b1", "b", AttemptState::Lost, true)],
        );
        let mut seen = Seen::starting_with(&[unknown("a", "a1"), flagged.clone()]);
        assert_eq!(seen.news(&[unknown("a", "a1"), flagged]), vec![]);
    }

    #[test]
    fn a_job_that_becomes_unknown_is_announced_once() {
        let mut seen = Seen::starting_with(&[]);
        let news = seen.news(&[unknown("a", "a1")]);
        assert_eq!(ids(&news), vec![("a", "a1", Reason::Unknown)]);
        let shown = Announcement::One(news[0].clone());
        assert_eq!(
            shown.body(),
            "Job a is unknown (attempt 1): a person must decide"
        );
        assert_eq!(shown.job_id(), Some("a"));
        assert_eq!(seen.news(&[unknown("a", "a1")]), vec![]);
    }

    #[test]
    fn a_job_unknown_again_with_a_new_attempt_is_announced_again() {
        let mut seen = Seen::starting_with(&[unknown("a", "a1")]);
        // A person abandoned a1; the next attempt timed out too.
        let again = detail(
            job("a", JobStatus::Unknown, false, "later"),
            vec![
                attempt("a1", "a", AttemptState::Abandoned, false),
                attempt("a2", "a", AttemptState::Unknown, false),
            ],
        );
        assert_eq!(
            ids(&seen.news(std::slice::from_ref(&again))),
            vec![("a", "a2", Reason::Unknown)]
        );
        assert_eq!(seen.news(&[again]), vec![]);
    }

    #[test]
    fn only_jobs_changed_since_their_last_reading_are_looked_at() {
        let mut seen = Seen::starting_with(&[unknown("a", "a1")]);
        let (same, changed, new) = (
            job("a", JobStatus::Unknown, false, "a1"),
            job("a", JobStatus::Unknown, false, "a2"),
            job("n", JobStatus::Unknown, false, "n1"),
        );
        assert!(seen.to_look_at(std::slice::from_ref(&same)).is_empty());
        assert_eq!(seen.to_look_at(&[changed, new]).len(), 2);
        let _ = seen.news(&[unknown("n", "n1")]);
        assert!(seen.to_look_at(&[same]).is_empty());
    }

    #[test]
    fn an_unknown_job_later_flagged_is_announced_again_for_the_flag() {
        let mut seen = Seen::starting_with(&[unknown("a", "a1")]);
        let flagged = detail(
            job("a", JobStatus::Cancelled, true, "later"),
            vec![attempt("a1", "a", AttemptState::Lost, true)],
        );
        let news = seen.news(&[flagged]);
        assert_eq!(ids(&news), vec![("a", "a1", Reason::Flagged)]);
        assert_eq!(
            Announcement::One(news[0].clone()).body(),
            "A late answer for job a was flagged for review"
        );
    }

    #[test]
    fn jobs_that_do_not_need_attention_are_never_announced() {
        let mut seen = Seen::starting_with(&[]);
        let calm: Vec<JobDetail> = [
            JobStatus::Queued,
            JobStatus::Running,
            JobStatus::Succeeded,
            JobStatus::Failed,
        ]
        .into_iter()
        .map(|status| detail(job("q", status, false, "t"), Vec::new()))
        .collect();
        assert_eq!(seen.news(&calm), vec![]);
    }

    #[test]
    fn a_few_new_jobs_get_one_notification_each_and_a_burst_one_in_all() {
        let mut seen = Seen::starting_with(&[unknown("old", "o1")]);
        let news = seen.news(&[unknown("new-1", "n1"), unknown("old", "o1")]);
        assert_eq!(ids(&news), vec![("new-1", "n1", Reason::Unknown)]);

        let few: Vec<Notice> = (0..APART)
            .map(|i| Notice {
                job_id: format!("j{i}"),
                attempt_id: format!("a{i}"),
                attempt_number: 1,
                reason: Reason::Unknown,
            })
            .collect();
        assert_eq!(announcements(few).len(), APART);

        let burst: Vec<JobDetail> = (0..37)
            .map(|i| unknown(&format!("j{i}"), &format!("a{i}")))
            .collect();
        let shown = announcements(seen.news(&burst));
        assert_eq!(shown, vec![Announcement::Many(37)]);
        assert_eq!(shown[0].title(), "37 jobs need you");
        assert_eq!(shown[0].job_id(), None, "a click opens no one job");
    }
}
