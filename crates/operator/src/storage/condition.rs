//! The migration's outcome as a condition on the CRD it migrated, where
//! `kubectl describe crd` shows it next to `storedVersions`.
//!
//! The API server's own CRD controllers set their condition types on a fresh
//! copy and keep the others, so this one survives them.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::PostParams;
use kube::{Api, Client};

use super::migrator::{Migration, MigrationError, MigrationOptions, migrate};
use super::versions::CrdVersions;

/// The condition type Ratchet sets on its CRDs.
pub const STORAGE_MIGRATED: &str = "RatchetStorageMigrated";

/// What the condition says, decided without I/O.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}

impl Outcome {
    /// A migration is running (objects are being rewritten).
    pub fn running(storage: &str) -> Outcome {
        Outcome {
            status: "Unknown",
            reason: "Migrating",
            message: format!("rewriting every stored object as {storage}"),
        }
    }

    pub fn of(result: &Result<Migration, MigrationError>) -> Outcome {
        match result {
            Ok(m) if m.pruned => Outcome {
                status: "True",
                reason: "Pruned",
                message: format!(
                    "rewrote {} objects as {}; storedVersions pruned from [{}] to [{}]",
                    m.rewritten,
                    m.storage,
                    m.stored_before.join(", "),
                    m.storage
                ),
            },
            Ok(m) if m.crd_changed => Outcome {
                status: "Unknown",
                reason: "CRDChanged",
                message: format!(
                    "the CRD changed while {} objects were rewritten; nothing pruned, the next run finishes",
                    m.rewritten
                ),
            },
            Ok(m) => Outcome {
                status: "True",
                reason: "UpToDate",
                message: format!(
                    "every object is stored as {}; storedVersions is [{}]",
                    m.storage, m.storage
                ),
            },
            Err(e) => Outcome {
                status: "False",
                reason: "MigrationFailed",
                message: e.to_string(),
            },
        }
    }

    /// `conditions` with this outcome in place of the previous one; `None` when
    /// they already say it (no write, no new transition time).
    pub fn merged_into(
        &self,
        conditions: &[CustomResourceDefinitionCondition],
        now: Time,
    ) -> Option<Vec<CustomResourceDefinitionCondition>> {
        let previous = conditions.iter().find(|c| c.type_ == STORAGE_MIGRATED);
        if previous.is_some_and(|c| {
            c.status == self.status
                && c.reason.as_deref() == Some(self.reason)
                && c.message.as_deref() == Some(self.message.as_str())
        }) {
            return None;
        }
        let last_transition_time = match previous {
            Some(c) if c.status == self.status => c.last_transition_time.clone(),
            _ => Some(now),
        };
        let mut merged: Vec<_> = conditions
            .iter()
            .filter(|c| c.type_ != STORAGE_MIGRATED)
            .cloned()
            .collect();
        merged.push(CustomResourceDefinitionCondition {
            type_: STORAGE_MIGRATED.to_owned(),
            status: self.status.to_owned(),
            reason: Some(self.reason.to_owned()),
            message: Some(self.message.clone()),
            last_transition_time,
            observed_generation: None,
        });
        Some(merged)
    }
}

/// [`migrate`], with the CRD's condition saying that it runs (when there is
/// something to rewrite) and then how it ended. A condition that cannot be
/// written is logged; the migration's own result is what counts.
pub async fn migrate_recorded(
    client: &Client,
    live: &CustomResourceDefinition,
    options: MigrationOptions,
) -> Result<Migration, MigrationError> {
    let versions = CrdVersions::of(live);
    let crd = versions.name.as_str();
    if let (true, Some(storage)) = (versions.needs_migration(), versions.storage.as_deref()) {
        log_failure(crd, record(client, crd, &Outcome::running(storage)).await);
    }
    let result = migrate(client, live, options).await;
    log_failure(crd, record(client, crd, &Outcome::of(&result)).await);
    result
}

fn log_failure(crd: &str, recorded: Result<(), kube::Error>) {
    if let Err(e) = recorded {
        tracing::warn!(crd, error = %e, "writing the storage migration condition failed");
    }
}

/// Writes `outcome` onto the CRD's status (guarded by its resourceVersion; a
/// conflict reads again, a few times).
pub async fn record(client: &Client, crd: &str, outcome: &Outcome) -> Result<(), kube::Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut attempts = 0;
    loop {
        let mut current = api.get(crd).await?;
        let conditions = current
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let Some(merged) =
            outcome.merged_into(&conditions, Time(k8s_openapi::jiff::Timestamp::now()))
        else {
            return Ok(());
        };
        current
            .status
            .get_or_insert_with(Default::default)
            .conditions = Some(merged);
        match api
            .replace_status(crd, &PostParams::default(), &current)
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 && attempts < 3 => attempts += 1,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migration(pruned: bool, crd_changed: bool) -> Migration {
        Migration {
            crd: "cinders.cinder.openstack.c5c3.io".into(),
            storage: "v1beta1".into(),
            rewritten: 3,
            managed_fields_cleaned: 0,
            pages: 1,
            restarts: 0,
            stored_before: vec!["v1alpha1".into(), "v1beta1".into()],
            pruned,
            crd_changed,
            note: None,
        }
    }

    fn at(seconds: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(seconds).expect("a time"))
    }

    #[test]
    fn each_result_says_what_happened() {
        let pruned = Outcome::of(&Ok(migration(true, false)));
        assert_eq!((pruned.status, pruned.reason), ("True", "Pruned"));
        assert_eq!(
            pruned.message,
            "rewrote 3 objects as v1beta1; storedVersions pruned from [v1alpha1, v1beta1] to [v1beta1]"
        );
        let clean = Outcome::of(&Ok(migration(false, false)));
        assert_eq!((clean.status, clean.reason), ("True", "UpToDate"));
        let changed = Outcome::of(&Ok(migration(false, true)));
        assert_eq!((changed.status, changed.reason), ("Unknown", "CRDChanged"));
        let failed = Outcome::of(&Err(MigrationError::NoStorageVersion("x".into())));
        assert_eq!((failed.status, failed.reason), ("False", "MigrationFailed"));
        assert!(failed.message.contains("no storage version"));
    }

    #[test]
    fn merging_keeps_other_conditions_and_the_transition_time_of_the_same_status() {
        let established = CustomResourceDefinitionCondition {
            type_: "Established".into(),
            status: "True".into(),
            ..Default::default()
        };
        let running = Outcome::running("v1beta1");
        let first = running
            .merged_into(std::slice::from_ref(&established), at(10))
            .expect("a change");
        assert_eq!(first.len(), 2);
        assert_eq!(first[0], established);
        assert_eq!(running.merged_into(&first, at(20)), None, "unchanged");

        let done = Outcome::of(&Ok(migration(true, false)));
        let second = done.merged_into(&first, at(30)).expect("a change");
        assert_eq!(second[1].last_transition_time, Some(at(30)), "a new status");
        let clean = Outcome::of(&Ok(migration(false, false)));
        let third = clean.merged_into(&second, at(40)).expect("a new reason");
        assert_eq!(
            third[1].last_transition_time,
            Some(at(30)),
            "still True: the transition time stays"
        );
    }
}
