//! A bulk operation's request, checked and put in one form before its fingerprint is taken.

use super::*;

/// A request checked and put in one form: what its fingerprint is taken of.
pub(super) struct Checked {
    pub(super) request: BulkRequest,
    /// The request's filter, checked as the Jobs list checks its own.
    pub(super) filter: ListFilter,
    pub(super) fingerprint: String,
}

impl Engine {
    /// Checks a request and puts it in one form: a resolve's verdict, a retry's provider, the
    /// filter's times as the ledger writes them.
    pub(super) async fn check_bulk(&self, request: &BulkRequest) -> Result<Checked> {
        let mut request = request.clone();
        request.dry_run = false;
        let action = request.action;
        match (action, request.verdict) {
            (BulkAction::Resolve, None) => {
                return Err(Error::invalid_input(
                    "as",
                    "a bulk resolve needs the verdict: succeeded, failed or abandoned",
                ))
            }
            (BulkAction::Cancel | BulkAction::Retry, Some(_)) => {
                return Err(Error::invalid_input(
                    "as",
                    "a verdict is given only with the resolve action",
                ))
            }
            _ => {}
        }
        let f = &mut request.filter;
        if action == BulkAction::Resolve {
            match f.status {
                None | Some(JobStatus::Unknown) => f.status = Some(JobStatus::Unknown),
                Some(other) => {
                    return Err(Error::invalid_input(
                        "status",
                        format!(
                            "a bulk resolve settles unknown jobs only; {} jobs have no unknown \
                             attempt to resolve",
                            other.as_str()
                        ),
                    ))
                }
            }
        }
        // The Jobs list's own checks and form (blanks, search and error kind length, NUL, times)
        // before anything is recorded.
        let filter = ListFilter::new(f)?;
        *f = filter.terms().clone();
        request.provider = blank_is_none(request.provider.take());
        if let Some(provider) = &request.provider {
            input::refuse_nul("provider", provider)?;
            if action != BulkAction::Retry {
                return Err(Error::invalid_input(
                    "provider",
                    "the provider to retry at is given only with the retry action; to filter \
                     by provider, use the filter's provider",
                ));
            }
            let mut conn = self.read().await?;
            if provider_rows::get(&mut conn, provider).await?.is_none() {
                return Err(Error::invalid_input(
                    "provider",
                    format!("no provider named {provider} is configured"),
                ));
            }
        }
        let fingerprint = {
            let mut asked = serde_json::to_value(&request)
                .map_err(|e| Error::internal(format!("a bulk request as JSON: {e}")))?;
            if let Value::Object(map) = &mut asked {
                map.remove("dry_run");
            }
            canonical_sha256(&without_nulls(asked))
        };
        Ok(Checked {
            request,
            filter,
            fingerprint,
        })
    }
}
