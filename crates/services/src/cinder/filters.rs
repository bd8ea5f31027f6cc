//! `resource_filters.json`: the filters `cinder-api` lets users put on list
//! queries (`[DEFAULT] resource_query_filters_file`). Without it every list logs
//! an error and accepts no filter. Rendered from data per release, like
//! `api-paste.ini`.

use ratchet_release::Release;

/// The ConfigMap key.
pub const FILE: &str = "resource_filters.json";

/// Resource → the query filters users may use, per release series.
type Filters = &'static [(&'static str, &'static [&'static str])];

/// Checked against cinder 28.0.0 (2026.1) and 29.0.0 (2026.2): the same list.
const BY_SERIES: &[(&str, Filters)] = &[(
    "2026.1",
    &[
        (
            "attachment",
            &["volume_id", "status", "instance_id", "attach_status"],
        ),
        ("backup", &["name", "status", "volume_id"]),
        ("group", &["name"]),
        ("group_snapshot", &["name", "status", "group_id"]),
        (
            "message",
            &[
                "resource_uuid",
                "resource_type",
                "event_id",
                "request_id",
                "message_level",
            ],
        ),
        ("pool", &["name", "volume_type"]),
        (
            "snapshot",
            &[
                "name",
                "status",
                "volume_id",
                "metadata",
                "availability_zone",
                "consumes_quota",
            ],
        ),
        (
            "volume",
            &[
                "name",
                "status",
                "metadata",
                "bootable",
                "migration_status",
                "availability_zone",
                "group_id",
                "size",
                "created_at",
                "updated_at",
                "consumes_quota",
            ],
        ),
        ("volume_type", &["is_public", "extra_specs"]),
    ],
)];

/// The file for `release` (the release the API pods run); the newest data for
/// a release the table does not know.
pub fn render(release: Option<Release>) -> String {
    let filters = super::for_release(BY_SERIES, release)
        .copied()
        .unwrap_or_default();
    let map: serde_json::Map<String, serde_json::Value> = filters
        .iter()
        .map(|(resource, names)| ((*resource).to_string(), serde_json::json!(names)))
        .collect();
    serde_json::to_string_pretty(&map).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_resource_as_json() {
        let text = render(Release::parse("2026.2").ok());
        let parsed: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(
            parsed["backup"],
            serde_json::json!(["name", "status", "volume_id"])
        );
        assert_eq!(parsed.as_object().map(|o| o.len()), Some(9));
    }
}
