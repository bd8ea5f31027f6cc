//! Reading the status every service resource stores (the same fields for all
//! services) from its JSON, for commands that show any service.

use serde_json::Value;

/// A field of the resource's status as text (empty when absent).
pub fn status_text(resource: &Value, field: &str) -> String {
    resource["status"][field]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A condition of the resource: status, reason, message.
pub fn condition(resource: &Value, kind: &str) -> Option<(String, String, String)> {
    resource["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .map(|c| {
            let text = |f: &str| c[f].as_str().unwrap_or_default().to_string();
            (text("status"), text("reason"), text("message"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_and_conditions_or_says_nothing() {
        let resource = serde_json::json!({ "status": {
            "installedRelease": "2026.1",
            "conditions": [{ "type": "Ready", "status": "True", "reason": "Ready", "message": "ok" }],
        } });
        assert_eq!(status_text(&resource, "installedRelease"), "2026.1");
        assert_eq!(status_text(&resource, "targetRelease"), "");
        assert_eq!(
            condition(&resource, "Ready"),
            Some(("True".into(), "Ready".into(), "ok".into()))
        );
        assert_eq!(condition(&resource, "DatabaseReady"), None);
    }
}
