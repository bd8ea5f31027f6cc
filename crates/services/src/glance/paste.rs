//! `glance-api-paste.ini`: the WSGI pipeline glance's API loads at start
//! (without it the application does not load: "Unable to locate paste config
//! file"). Ratchet renders it from data per release rather than trusting an
//! image to carry one.
//!
//! glance picks the pipeline by `[paste_deploy] flavor`: the composite
//! `glance-api` or `glance-api-<flavor>`, whose `api` composite then takes the
//! key `<flavor>` (`default` without one). Every flavor glance ships is
//! rendered; without a flavor no request is authenticated.

use ratchet_release::Release;

/// The ConfigMap key, named by `[paste_deploy] config_file`.
pub const FILE: &str = "glance-api-paste.ini";

/// Where the healthcheck looks for the file that takes a pod out of service
/// (in the pod's writable state directory).
const HEALTHCHECK_DISABLE: &str = "/var/lib/glance/healthcheck_disable";

/// A paste filter or app: its name in the file and its factory entry point.
struct Part {
    name: &'static str,
    factory: &'static str,
    /// Extra settings of the part.
    settings: &'static [(&'static str, &'static str)],
}

/// One release series' pipeline.
struct Pipeline {
    /// Filters in front of every API request, in order.
    front: &'static [&'static str],
    /// `[paste_deploy] flavor` ("" for none) → the filters after `front`, and
    /// whether they authenticate requests through Keystone.
    flavors: &'static [(&'static str, &'static [&'static str], bool)],
    filters: &'static [Part],
}

/// By the first series each pipeline holds for, oldest first. Checked against
/// glance 32.0.0 (2026.1) and 33.0.0 (2026.2): the same pipeline.
const PIPELINES: &[(&str, Pipeline)] = &[(
    "2026.1",
    Pipeline {
        front: &[
            "cors",
            "http_proxy_to_wsgi",
            "versionnegotiation",
            "osprofiler",
        ],
        flavors: &[
            ("", &["unauthenticated-context"], false),
            ("caching", &["unauthenticated-context", "cache"], false),
            (
                "cachemanagement",
                &["unauthenticated-context", "cache", "cachemanage"],
                false,
            ),
            ("keystone", &["authtoken", "context"], true),
            ("keystone+caching", &["authtoken", "context", "cache"], true),
            (
                "keystone+cachemanagement",
                &["authtoken", "context", "cache", "cachemanage"],
                true,
            ),
        ],
        filters: &[
            Part {
                name: "cors",
                factory: "oslo_middleware.cors:filter_factory",
                settings: &[
                    ("oslo_config_project", "glance"),
                    ("oslo_config_program", "glance-api"),
                ],
            },
            Part {
                name: "http_proxy_to_wsgi",
                factory: "oslo_middleware:HTTPProxyToWSGI.factory",
                settings: &[],
            },
            Part {
                name: "versionnegotiation",
                factory: "glance.api.middleware.version_negotiation:VersionNegotiationFilter.factory",
                settings: &[],
            },
            Part {
                name: "osprofiler",
                factory: "osprofiler.web:WsgiMiddleware.factory",
                settings: &[],
            },
            Part {
                name: "unauthenticated-context",
                factory: "glance.api.middleware.context:UnauthenticatedContextMiddleware.factory",
                settings: &[],
            },
            Part {
                name: "authtoken",
                factory: "keystonemiddleware.auth_token:filter_factory",
                settings: &[("delay_auth_decision", "true")],
            },
            Part {
                name: "context",
                factory: "glance.api.middleware.context:ContextMiddleware.factory",
                settings: &[],
            },
            Part {
                name: "cache",
                factory: "glance.api.middleware.cache:CacheFilter.factory",
                settings: &[],
            },
            Part {
                name: "cachemanage",
                factory: "glance.api.middleware.cache_manage:CacheManageFilter.factory",
                settings: &[],
            },
        ],
    },
)];

/// The newest entry not after `release`; the newest for a release that does
/// not parse, the oldest for one before all.
fn pipeline(release: Option<Release>) -> Option<&'static Pipeline> {
    PIPELINES
        .iter()
        .rev()
        .find(|(since, _)| release.is_none_or(|r| Release::parse(since).is_ok_and(|s| s <= r)))
        .or(PIPELINES.first())
        .map(|(_, pipeline)| pipeline)
}

/// Whether `flavor` ("" for none) authenticates through Keystone in
/// `release`'s pipeline; `None` when the file has no pipeline of that name
/// (the API would not load).
pub fn authenticates(release: Option<Release>, flavor: &str) -> Option<bool> {
    pipeline(release)?
        .flavors
        .iter()
        .find(|(name, _, _)| *name == flavor)
        .map(|(_, _, keystone)| *keystone)
}

/// The flavors `release`'s file has, for a refusal's message.
pub fn flavors(release: Option<Release>) -> Vec<&'static str> {
    pipeline(release)
        .map(|p| p.flavors.iter().map(|(name, _, _)| *name).collect())
        .unwrap_or_default()
}

fn part(out: &mut String, kind: &str, factory_key: &str, part: &Part) {
    out.push_str(&format!(
        "\n[{kind}:{}]\n{factory_key} = {}\n",
        part.name, part.factory
    ));
    for (key, value) in part.settings {
        out.push_str(&format!("{key} = {value}\n"));
    }
}

/// The file for `release` (the release the API pods run).
pub fn render(release: Option<Release>) -> String {
    let Some(p) = pipeline(release) else {
        return String::new();
    };
    let mut out = String::from(
        "# Rendered by Ratchet: glance-api's WSGI pipeline. Edits are overwritten.\n\
         # [paste_deploy] flavor picks glance-api-<flavor> (glance-api without one).\n",
    );
    for (flavor, _, _) in p.flavors {
        let name = if flavor.is_empty() {
            "glance-api".to_string()
        } else {
            format!("glance-api-{flavor}")
        };
        out.push_str(&format!(
            "\n[composite:{name}]\npaste.composite_factory = glance.api:root_app_factory\n\
             /: api\n/healthcheck: healthcheck\n"
        ));
    }
    out.push_str(
        "\n# Keyed by [paste_deploy] flavor (default without one).\n\
         [composite:api]\npaste.composite_factory = glance.api:pipeline_factory\n",
    );
    for (flavor, filters, _) in p.flavors {
        let mut names: Vec<&str> = p.front.to_vec();
        names.extend(filters.iter());
        names.push("rootapp");
        let key = if flavor.is_empty() {
            "default"
        } else {
            *flavor
        };
        out.push_str(&format!("{key} = {}\n", names.join(" ")));
    }
    out.push_str(
        "\n[composite:rootapp]\npaste.composite_factory = glance.api:root_app_factory\n\
         /: apiversions\n/v2: apiv2app\n\
         \n[app:apiversions]\npaste.app_factory = glance.api.versions:create_resource\n\
         \n[app:apiv2app]\npaste.app_factory = glance.api.v2.router:API.factory\n",
    );
    out.push_str(&format!(
        "\n[app:healthcheck]\npaste.app_factory = oslo_middleware:Healthcheck.app_factory\n\
         backends = disable_by_file\ndisable_by_file_path = {HEALTHCHECK_DISABLE}\n"
    ));
    for filter in p.filters {
        part(&mut out, "filter", "paste.filter_factory", filter);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pipeline_names_only_defined_parts() {
        for (_, p) in PIPELINES {
            let defined: Vec<&str> = p.filters.iter().map(|f| f.name).collect();
            for name in p
                .front
                .iter()
                .chain(p.flavors.iter().flat_map(|(_, f, _)| f.iter()))
            {
                assert!(defined.contains(name), "{name} is not defined");
            }
        }
    }

    #[test]
    fn no_flavor_serves_unauthenticated_and_keystone_authenticates() {
        let text = render(Release::parse("2026.2").ok());
        assert!(text.contains("\n[composite:glance-api]\npaste.composite_factory = glance.api:root_app_factory\n/: api\n"), "{text}");
        assert!(text.contains("\ndefault = cors http_proxy_to_wsgi versionnegotiation osprofiler unauthenticated-context rootapp\n"), "{text}");
        assert!(text.contains("\nkeystone = cors http_proxy_to_wsgi versionnegotiation osprofiler authtoken context rootapp\n"));
        assert!(text.contains("\n[composite:glance-api-keystone+caching]\n"));
        assert!(text.contains("disable_by_file_path = /var/lib/glance/healthcheck_disable\n"));
        assert_eq!(authenticates(None, ""), Some(false));
        assert_eq!(authenticates(None, "keystone+caching"), Some(true));
        assert_eq!(authenticates(None, "keystone+unknown"), None);
        assert_eq!(
            render(None),
            text,
            "an unparsable release gets the newest data"
        );
    }
}
