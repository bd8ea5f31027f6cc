//! `api-paste.ini`: the compute API's WSGI pipeline, the first file of
//! `OS_NOVA_CONFIG_FILES` (Nova loads its paste application from it).
//! Ratchet renders it from data rather than trusting an image to carry one.
//! Checked against nova 33.0.2 (2026.1) and 34.0.0 (2026.2), which ship the
//! same pipeline. Nova authenticates only through Keystone: its
//! `pipeline_factory_v21` takes the `keystone` line whatever the
//! configuration says (no `noauth2` pipeline is left).

use std::fmt::Write;

/// The ConfigMap key.
pub const FILE: &str = "api-paste.ini";

/// The filters in front of the v2.1 API (and of the legacy v2 surface, which
/// adds `legacy_v2_compatible` before the app).
const V21: &str = "cors http_proxy_to_wsgi compute_req_id faultwrap request_log sizelimit osprofiler authtoken keystonecontext";

/// Sections: name, then its lines.
const SECTIONS: &[(&str, &[&str])] = &[
    (
        "filter:request_log",
        &["paste.filter_factory = nova.api.openstack.requestlog:RequestLog.factory"],
    ),
    (
        "filter:compute_req_id",
        &["paste.filter_factory = nova.api.compute_req_id:ComputeReqIdMiddleware.factory"],
    ),
    (
        "filter:faultwrap",
        &["paste.filter_factory = nova.api.openstack:FaultWrapper.factory"],
    ),
    (
        "filter:osprofiler",
        &["paste.filter_factory = nova.profiler:WsgiMiddleware.factory"],
    ),
    (
        "filter:sizelimit",
        &["paste.filter_factory = oslo_middleware:RequestBodySizeLimiter.factory"],
    ),
    (
        "filter:http_proxy_to_wsgi",
        &["paste.filter_factory = oslo_middleware.http_proxy_to_wsgi:HTTPProxyToWSGI.factory"],
    ),
    (
        "filter:legacy_v2_compatible",
        &["paste.filter_factory = nova.api.openstack:LegacyV2CompatibleWrapper.factory"],
    ),
    (
        "app:osapi_compute_app_v21",
        &["paste.app_factory = nova.api.openstack.compute:APIRouterV21.factory"],
    ),
    (
        "pipeline:oscomputeversions",
        &["pipeline = cors faultwrap request_log http_proxy_to_wsgi oscomputeversionapp"],
    ),
    (
        "pipeline:oscomputeversion_v2",
        &[
            "pipeline = cors compute_req_id faultwrap request_log http_proxy_to_wsgi oscomputeversionapp_v2",
        ],
    ),
    (
        "pipeline:oscomputeversion_legacy_v2",
        &[
            "pipeline = cors compute_req_id faultwrap request_log http_proxy_to_wsgi legacy_v2_compatible oscomputeversionapp_v2",
        ],
    ),
    (
        "app:oscomputeversionapp",
        &["paste.app_factory = nova.api.openstack.compute.versions:Versions.factory"],
    ),
    (
        "app:oscomputeversionapp_v2",
        &["paste.app_factory = nova.api.openstack.compute.versions:VersionsV2.factory"],
    ),
    (
        "filter:cors",
        &[
            "paste.filter_factory = oslo_middleware.cors:filter_factory",
            "oslo_config_project = nova",
        ],
    ),
    (
        "filter:keystonecontext",
        &["paste.filter_factory = nova.api.auth:NovaKeystoneContext.factory"],
    ),
    (
        "filter:authtoken",
        &["paste.filter_factory = keystonemiddleware.auth_token:filter_factory"],
    ),
];

/// The file's text.
pub fn render() -> String {
    let mut out = format!(
        "# Rendered by Ratchet: Nova's compute API pipeline.\n\
         [composite:osapi_compute]\nuse = call:nova.api.openstack.urlmap:urlmap_factory\n\
         /: oscomputeversions\n/v2: oscomputeversion_legacy_v2\n/v2.1: oscomputeversion_v2\n\
         /v2/+: openstack_compute_api_v21_legacy_v2_compatible\n\
         /v2.1/+: openstack_compute_api_v21\n\n\
         [composite:openstack_compute_api_v21]\nuse = call:nova.api.auth:pipeline_factory_v21\n\
         keystone = {V21} osapi_compute_app_v21\n\n\
         [composite:openstack_compute_api_v21_legacy_v2_compatible]\n\
         use = call:nova.api.auth:pipeline_factory_v21\n\
         keystone = {V21} legacy_v2_compatible osapi_compute_app_v21\n\n"
    );
    for (section, lines) in SECTIONS {
        let _ = writeln!(out, "[{section}]");
        for line in *lines {
            let _ = writeln!(out, "{line}");
        }
        out.push('\n');
    }
    out
}

/// The ConfigMap entry.
pub fn file() -> (&'static str, String) {
    (FILE, render())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every filter or app a pipeline names is defined once.
    #[test]
    fn every_part_a_pipeline_names_is_defined_once() {
        let text = render();
        let named: Vec<&str> = text
            .lines()
            .filter_map(|l| {
                l.strip_prefix("keystone = ")
                    .or(l.strip_prefix("pipeline = "))
            })
            .flat_map(str::split_whitespace)
            .collect();
        assert!(named.contains(&"authtoken"), "{text}");
        for part in named {
            let defined = text
                .lines()
                .filter(|l| {
                    [format!("[filter:{part}]"), format!("[app:{part}]")].contains(&l.to_string())
                })
                .count();
            assert_eq!(defined, 1, "{part} in {text}");
        }
    }
}
