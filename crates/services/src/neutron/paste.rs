//! `api-paste.ini`: the WSGI pipeline Neutron's API loads at start
//! (`[DEFAULT] api_paste_config`). Ratchet renders it from data rather than
//! trusting an image to carry one. Checked against neutron 28.0.2 (2026.1)
//! and 29.0.0 (2026.2), which ship the same pipeline: `neutron.auth`'s
//! `pipeline_factory` picks the `noauth` or `keystone` line by `[DEFAULT]
//! auth_strategy`.

use std::fmt::Write;

use super::config::STATE_DIR;

/// The ConfigMap key, named by `[DEFAULT] api_paste_config`.
pub const FILE: &str = "api-paste.ini";

/// Filters in front of the v2.0 API, without and with Keystone.
const V2_NOAUTH: &str = "cors http_proxy_to_wsgi request_id fake_project_id catch_errors osprofiler extensions neutronapiapp_v2_0";
const V2_KEYSTONE: &str = "cors http_proxy_to_wsgi request_id catch_errors osprofiler authtoken keystonecontext extensions neutronapiapp_v2_0";
const VERSIONS: &str = "cors http_proxy_to_wsgi neutronversions";

/// A filter or app: its section, factory key and entry point, extra settings.
type Part = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

const PARTS: &[Part] = &[
    (
        "filter:request_id",
        "paste.filter_factory",
        "oslo_middleware:RequestId.factory",
        &[],
    ),
    (
        "filter:catch_errors",
        "paste.filter_factory",
        "oslo_middleware:CatchErrors.factory",
        &[],
    ),
    (
        "filter:cors",
        "paste.filter_factory",
        "oslo_middleware.cors:filter_factory",
        &[("oslo_config_project", "neutron")],
    ),
    (
        "filter:fake_project_id",
        "paste.filter_factory",
        "neutron.auth:NoauthFakeProjectId.factory",
        &[],
    ),
    (
        "filter:http_proxy_to_wsgi",
        "paste.filter_factory",
        "oslo_middleware.http_proxy_to_wsgi:HTTPProxyToWSGI.factory",
        &[],
    ),
    (
        "filter:keystonecontext",
        "paste.filter_factory",
        "neutron.auth:NeutronKeystoneContext.factory",
        &[],
    ),
    (
        "filter:authtoken",
        "paste.filter_factory",
        "keystonemiddleware.auth_token:filter_factory",
        &[],
    ),
    (
        "filter:extensions",
        "paste.filter_factory",
        "neutron.api.extensions:plugin_aware_extension_middleware_factory",
        &[],
    ),
    (
        "filter:osprofiler",
        "paste.filter_factory",
        "osprofiler.web:WsgiMiddleware.factory",
        &[],
    ),
    (
        "app:neutronversions",
        "paste.app_factory",
        "neutron.pecan_wsgi.app:versions_factory",
        &[],
    ),
    (
        "app:neutronapiapp_v2_0",
        "paste.app_factory",
        "neutron.api.v2.router:APIRouter.factory",
        &[],
    ),
];

/// The file's text.
pub fn render() -> String {
    let mut out = String::from(
        "# Rendered by Ratchet: Neutron's API pipeline.\n\
         [composite:neutron]\nuse = egg:Paste#urlmap\n\
         /: neutronversions_composite\n/healthcheck: healthcheck\n/v2.0: neutronapi_v2_0\n\n",
    );
    for (name, noauth, keystone) in [
        ("neutronapi_v2_0", V2_NOAUTH, V2_KEYSTONE),
        ("neutronversions_composite", VERSIONS, VERSIONS),
    ] {
        let _ = write!(
            out,
            "[composite:{name}]\nuse = call:neutron.auth:pipeline_factory\n\
             noauth = {noauth}\nkeystone = {keystone}\n\n"
        );
    }
    for (section, key, factory, settings) in PARTS {
        let _ = writeln!(out, "[{section}]\n{key} = {factory}");
        for (option, value) in *settings {
            let _ = writeln!(out, "{option} = {value}");
        }
        out.push('\n');
    }
    // A pod is taken out of its Service by creating this file in its state directory.
    let _ = write!(
        out,
        "[app:healthcheck]\npaste.app_factory = oslo_middleware:Healthcheck.app_factory\n\
         backends = disable_by_file\ndisable_by_file_path = {STATE_DIR}/healthcheck_disable\n"
    );
    out
}

/// The ConfigMap entry.
pub fn file() -> (&'static str, String) {
    (FILE, render())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every section a pipeline names is defined once, and both auth
    /// strategies have a pipeline in each composite.
    #[test]
    fn every_part_a_pipeline_names_is_defined_once() {
        let text = render();
        for pipeline in [V2_NOAUTH, V2_KEYSTONE, VERSIONS] {
            for part in pipeline.split_whitespace() {
                let defined = text
                    .lines()
                    .filter(|l| *l == format!("[filter:{part}]") || *l == format!("[app:{part}]"))
                    .count();
                assert_eq!(defined, 1, "{part} in {text}");
            }
        }
        assert_eq!(text.matches("noauth = ").count(), 2);
        assert_eq!(text.matches("keystone = ").count(), 2);
        assert!(text.contains("disable_by_file_path = /var/lib/neutron/healthcheck_disable"));
    }
}
