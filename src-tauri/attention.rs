//! Which jobs newly need a person (SPEC §13 "Attention"): a job that became `unknown`, or one
//! newly flagged for review. Pure, so the rule is tested apart from notifications and windows.

use std::collections::HashSet;

use onejob_engine::{Job, JobStatus};

/// Why a person is told about a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The job is `unknown`: its open attempt's outcome is not known.
    Unknown,
    /// A late answer (or a contradiction) was flagged for review.
    Flagged,
}

/// One desktop notification to show: the job and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub job_id: String,
    pub reason: Reason,
}

impl Notice {
    /// The notification's title.
    pub fn title(&self) -> &'static str {
        match self.reason {
            Reason::Unknown => "A job needs a person",
            Reason::Flagged => "A late answer needs a look",
        }
    }

    /// The notification's text, in SPEC words.
    pub fn body(&self) -> String {
        match self.reason {
            Reason::Unknown => format!("Job {} is unknown: a person must decide", self.job_id),
            Reason::Flagged => format!(
                "A late answer for job {} was flagged for review",
                self.job_id
            ),
        }
    }
}

/// The jobs a person has already been told about (or that needed attention before the app
/// started), per reason. Each job is announced at most once per reason while the app runs.
#[derive(Debug, Default)]
pub struct Seen {
    told: HashSet<(String, Reason)>,
}

impl Seen {
    /// Remembers every job that already needs attention, so none of them is announced.
    pub fn starting_with(jobs: &[Job]) -> Seen {
        let mut seen = Seen::default();
        let _ = seen.news(jobs);
        seen
    }

    /// The notices for jobs in `jobs` that newly need attention, oldest reason first within a
    /// job; they are remembered, so the same job and reason never come back.
    pub fn news(&mut self, jobs: &[Job]) -> Vec<Notice> {
        let mut out = Vec::new();
        for job in jobs {
            for reason in reasons(job) {
                if self.told.insert((job.id.clone(), reason)) {
                    out.push(Notice {
                        job_id: job.id.clone(),
                        reason,
                    });
                }
            }
        }
        out
    }
}

/// Why a job needs attention now, if it does.
fn reasons(job: &Job) -> impl Iterator<Item = Reason> {
    let unknown = (job.status == JobStatus::Unknown).then_some(Reason::Unknown);
    let flagged = job.flagged_for_review.then_some(Reason::Flagged);
    unknown.into_iter().chain(flagged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, status: JobStatus, flagged: bool) -> Job {
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
            updated_at: String::new(),
            finished_at: None,
            not_before: None,
        }
    }

    fn ids(notices: &[Notice]) -> Vec<(&str, Reason)> {
        notices
            .iter()
            .map(|n| (n.job_id.as_str(), n.reason))
            .collect()
    }

    #[test]
    fn jobs_that_needed_attention_at_start_are_not_announced() {
        let mut seen = Seen::starting_with(&[
            job("a", JobStatus::Unknown, false),
            job("b", JobStatus::Cancelled, true),
        ]);
        let again = [
            job("a", JobStatus::Unknown, false),
            job("b", JobStatus::Cancelled, true),
        ];
        assert_eq!(seen.news(&again), vec![]);
    }

    #[test]
    fn a_job_that_becomes_unknown_is_announced_once() {
        let mut seen = Seen::starting_with(&[]);
        let news = seen.news(&[job("a", JobStatus::Unknown, false)]);
        assert_eq!(ids(&news), vec![("a", Reason::Unknown)]);
        assert_eq!(news[0].body(), "Job a is unknown: a person must decide");
        assert_eq!(seen.news(&[job("a", JobStatus::Unknown, false)]), vec![]);
    }

    #[test]
    fn an_unknown_job_later_flagged_is_announced_again_for_the_flag() {
        let mut seen = Seen::starting_with(&[job("a", JobStatus::Unknown, false)]);
        let news = seen.news(&[job("a", JobStatus::Cancelled, true)]);
        assert_eq!(ids(&news), vec![("a", Reason::Flagged)]);
        assert_eq!(
            news[0].body(),
            "A late answer for job a was flagged for review"
        );
    }

    #[test]
    fn jobs_that_do_not_need_attention_are_never_announced() {
        let mut seen = Seen::starting_with(&[]);
        let calm = [
            job("q", JobStatus::Queued, false),
            job("r", JobStatus::Running, false),
            job("s", JobStatus::Succeeded, false),
            job("f", JobStatus::Failed, false),
        ];
        assert_eq!(seen.news(&calm), vec![]);
    }

    #[test]
    fn several_new_jobs_get_one_notice_each() {
        let mut seen = Seen::starting_with(&[job("old", JobStatus::Unknown, false)]);
        let news = seen.news(&[
            job("new-1", JobStatus::Unknown, false),
            job("old", JobStatus::Unknown, false),
            job("new-2", JobStatus::Succeeded, true),
        ]);
        assert_eq!(
            ids(&news),
            vec![("new-1", Reason::Unknown), ("new-2", Reason::Flagged)]
        );
    }
}
