//! What a CRD serves and stores, and what follows from it, without I/O.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

/// The versions of one CRD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrdVersions {
    pub name: String,
    pub group: String,
    pub generation: i64,
    /// The version new writes are stored in.
    pub storage: Option<String>,
    pub served: Vec<String>,
    /// `status.storedVersions`: every version objects may still be stored in.
    pub stored: Vec<String>,
}

impl CrdVersions {
    pub fn of(crd: &CustomResourceDefinition) -> CrdVersions {
        CrdVersions {
            name: crd.metadata.name.clone().unwrap_or_default(),
            group: crd.spec.group.clone(),
            generation: crd.metadata.generation.unwrap_or_default(),
            storage: crd
                .spec
                .versions
                .iter()
                .find(|v| v.storage)
                .map(|v| v.name.clone()),
            served: crd
                .spec
                .versions
                .iter()
                .filter(|v| v.served)
                .map(|v| v.name.clone())
                .collect(),
            stored: crd
                .status
                .as_ref()
                .and_then(|s| s.stored_versions.clone())
                .unwrap_or_default(),
        }
    }

    /// Objects may be stored in a version other than the storage version: they
    /// must be rewritten before `storedVersions` can be pruned.
    pub fn needs_migration(&self) -> bool {
        match &self.storage {
            Some(storage) => self.stored != [storage.clone()],
            None => false,
        }
    }

    /// `apiVersion` as objects carry it.
    pub fn api_version(&self, version: &str) -> String {
        format!("{}/{version}", self.group)
    }
}

/// The managed-fields entries to keep when some name an API version of this
/// group that is no longer served (server-side apply cannot use them); `None`
/// when there is nothing to clean.
pub fn served_managed_fields(
    entries: &[ManagedFieldsEntry],
    versions: &CrdVersions,
) -> Option<Vec<ManagedFieldsEntry>> {
    let unserved = |entry: &ManagedFieldsEntry| {
        entry.api_version.as_deref().is_some_and(|v| {
            v.split_once('/').is_some_and(|(group, version)| {
                group == versions.group && !versions.served.iter().any(|s| s == version)
            })
        })
    };
    entries
        .iter()
        .any(unserved)
        .then(|| entries.iter().filter(|e| !unserved(e)).cloned().collect())
}

/// Why applying `next` over the cluster's `live` CRD would break it; empty when
/// it is safe. The seed's failure: a version still listed in
/// `status.storedVersions` is removed from `spec.versions`, and the API server
/// refuses the CRD (or, worse, objects become unreadable).
pub fn preflight(live: &CustomResourceDefinition, next: &CustomResourceDefinition) -> Vec<String> {
    let live_versions = CrdVersions::of(live);
    let next_versions = CrdVersions::of(next);
    let kept: Vec<&str> = next.spec.versions.iter().map(|v| v.name.as_str()).collect();
    let mut problems = Vec::new();
    for stored in &live_versions.stored {
        if !kept.contains(&stored.as_str()) {
            problems.push(format!(
                "{}: version {stored} is removed, but status.storedVersions still lists it ({}); objects may still be stored as {stored}. Run the stored-version migration with the current Ratchet (the operator does at start-up, or `ratchet storage migrate`: it rewrites every object as {} and prunes storedVersions), then apply again",
                live_versions.name,
                live_versions.stored.join(", "),
                live_versions.storage.as_deref().unwrap_or("the storage version"),
            ));
        }
    }
    if next_versions.storage.is_none() {
        problems.push(format!(
            "{}: the new CRD marks no version as storage",
            next_versions.name
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(versions: &[(&str, bool, bool)], stored: &[&str]) -> CustomResourceDefinition {
        let versions: Vec<_> = versions
            .iter()
            .map(|(name, served, storage)| {
                json!({ "name": name, "served": served, "storage": storage })
            })
            .collect();
        serde_json::from_value(json!({
            "metadata": { "name": "cinders.cinder.openstack.c5c3.io", "generation": 3 },
            "spec": {
                "group": "cinder.openstack.c5c3.io",
                "names": { "kind": "Cinder", "plural": "cinders" },
                "scope": "Namespaced",
                "versions": versions,
            },
            "status": { "storedVersions": stored },
        }))
        .expect("crd")
    }

    #[test]
    fn migration_is_needed_until_only_the_storage_version_is_stored() {
        let both = crd(
            &[("v1alpha1", true, false), ("v1beta1", true, true)],
            &["v1alpha1", "v1beta1"],
        );
        assert!(CrdVersions::of(&both).needs_migration());
        let clean = crd(
            &[("v1alpha1", true, false), ("v1beta1", true, true)],
            &["v1beta1"],
        );
        assert!(!CrdVersions::of(&clean).needs_migration());
        let old_only = crd(
            &[("v1alpha1", true, false), ("v1beta1", true, true)],
            &["v1alpha1"],
        );
        assert!(CrdVersions::of(&old_only).needs_migration());
    }

    #[test]
    fn preflight_refuses_removing_a_stored_version_and_says_how_to_fix_it() {
        let live = crd(
            &[("v1alpha1", true, false), ("v1beta1", true, true)],
            &["v1alpha1", "v1beta1"],
        );
        let next = crd(&[("v1beta1", true, true)], &[]);
        let problems = preflight(&live, &next);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("version v1alpha1 is removed"),
            "{}",
            problems[0]
        );
        assert!(
            problems[0].contains("prunes storedVersions"),
            "{}",
            problems[0]
        );

        let migrated = crd(
            &[("v1alpha1", true, false), ("v1beta1", true, true)],
            &["v1beta1"],
        );
        assert!(preflight(&migrated, &next).is_empty());
        // Keeping the version (served or not) is always safe.
        let kept = crd(&[("v1alpha1", false, false), ("v1beta1", true, true)], &[]);
        assert!(preflight(&live, &kept).is_empty());
    }

    #[test]
    fn managed_fields_of_unserved_versions_are_dropped() {
        let versions = CrdVersions::of(&crd(&[("v1beta1", true, true)], &["v1beta1"]));
        let entry = |api: &str, manager: &str| ManagedFieldsEntry {
            api_version: Some(api.into()),
            manager: Some(manager.into()),
            ..Default::default()
        };
        let entries = vec![
            entry("cinder.openstack.c5c3.io/v1alpha1", "kubectl"),
            entry("cinder.openstack.c5c3.io/v1beta1", "ratchet"),
        ];
        let kept = served_managed_fields(&entries, &versions).expect("something to clean");
        assert_eq!(kept, vec![entries[1].clone()]);
        assert_eq!(served_managed_fields(&kept, &versions), None);
    }
}
