//! `api-paste.ini`: the WSGI pipeline `cinder-api` loads at start (without it
//! the API exits with `ConfigNotFound`). Ratchet renders it from data per
//! release rather than trusting an image to carry one.

use ratchet_release::Release;

/// The ConfigMap key, named by `[DEFAULT] api_paste_config`.
pub const FILE: &str = "api-paste.ini";

/// A paste filter or app: its name in the file and its factory entry point.
struct Part {
    name: &'static str,
    factory: &'static str,
    /// Extra settings of the part.
    settings: &'static [(&'static str, &'static str)],
}

/// One release series' pipeline.
struct Pipeline {
    /// Filters in front of every `/v3` request, in order, before authentication.
    front: &'static [&'static str],
    /// `[DEFAULT] auth_strategy` value → the filters that authenticate.
    auth: &'static [(&'static str, &'static [&'static str])],
    filters: &'static [Part],
    /// The `/v3` app and the version document's app.
    api_app: Part,
    versions_app: Part,
}

const FILTER: &str = "paste.filter_factory";
const APP: &str = "paste.app_factory";

/// By the first series each pipeline holds for. Checked against cinder 28.0.0
/// (2026.1) and 29.0.0 (2026.2): the same pipeline.
const PIPELINES: &[(&str, Pipeline)] = &[(
    "2026.1",
    Pipeline {
        front: &[
            "request_id",
            "cors",
            "http_proxy_to_wsgi",
            "faultwrap",
            "sizelimit",
            "osprofiler",
        ],
        auth: &[
            ("noauth", &["noauth"]),
            ("noauth_include_project_id", &["noauth_include_project_id"]),
            ("keystone", &["authtoken", "keystonecontext"]),
        ],
        filters: &[
            Part {
                name: "request_id",
                factory: "cinder.api.middleware.request_id:RequestId.factory",
                settings: &[],
            },
            Part {
                name: "cors",
                factory: "oslo_middleware.cors:filter_factory",
                settings: &[("oslo_config_project", "cinder")],
            },
            Part {
                name: "http_proxy_to_wsgi",
                factory: "oslo_middleware.http_proxy_to_wsgi:HTTPProxyToWSGI.factory",
                settings: &[],
            },
            Part {
                name: "faultwrap",
                factory: "cinder.api.middleware.fault:FaultWrapper.factory",
                settings: &[],
            },
            Part {
                name: "sizelimit",
                factory: "oslo_middleware.sizelimit:RequestBodySizeLimiter.factory",
                settings: &[],
            },
            Part {
                name: "osprofiler",
                factory: "osprofiler.web:WsgiMiddleware.factory",
                settings: &[],
            },
            Part {
                name: "noauth",
                factory: "cinder.api.middleware.auth:NoAuthMiddleware.factory",
                settings: &[],
            },
            Part {
                name: "noauth_include_project_id",
                factory: "cinder.api.middleware.auth:NoAuthMiddlewareIncludeProjectID.factory",
                settings: &[],
            },
            Part {
                name: "authtoken",
                factory: "keystonemiddleware.auth_token:filter_factory",
                settings: &[],
            },
            Part {
                name: "keystonecontext",
                factory: "cinder.api.middleware.auth:CinderKeystoneContext.factory",
                settings: &[],
            },
        ],
        api_app: Part {
            name: "apiv3",
            factory: "cinder.api.v3.router:APIRouter.factory",
            settings: &[],
        },
        versions_app: Part {
            name: "versions",
            factory: "cinder.api.versions:Versions.factory",
            settings: &[],
        },
    },
)];

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
    let Some(p) = super::for_release(PIPELINES, release) else {
        return String::new();
    };
    let mut out = String::from(
        "# Rendered by Ratchet: cinder-api's WSGI pipeline. Edits are overwritten.\n\
         \n[composite:osapi_volume]\nuse = call:cinder.api:root_app_factory\n\
         /: versions_pipeline\n/healthcheck: healthcheck_pipeline\n/v3: v3_pipeline\n\
         \n# Chosen by [DEFAULT] auth_strategy.\n\
         [composite:v3_pipeline]\nuse = call:cinder.api.middleware.auth:pipeline_factory\n",
    );
    for (strategy, auth) in p.auth {
        let mut names: Vec<&str> = p.front.to_vec();
        names.extend(auth.iter());
        names.push(p.api_app.name);
        out.push_str(&format!("{strategy} = {}\n", names.join(" ")));
    }
    out.push_str(&format!(
        "\n[pipeline:versions_pipeline]\npipeline = request_id cors http_proxy_to_wsgi faultwrap {}\n",
        p.versions_app.name
    ));
    out.push_str("\n[pipeline:healthcheck_pipeline]\npipeline = request_id healthcheck\n");
    out.push_str(&format!(
        "\n[app:healthcheck]\n{APP} = oslo_middleware:Healthcheck.app_factory\nbackends = disable_by_file\ndisable_by_file_path = /var/lib/cinder/healthcheck_disable\n"
    ));
    for filter in p.filters {
        part(&mut out, "filter", FILTER, filter);
    }
    part(&mut out, "app", APP, &p.api_app);
    part(&mut out, "app", APP, &p.versions_app);
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
                .chain(p.auth.iter().flat_map(|(_, a)| a.iter()))
            {
                assert!(defined.contains(name), "{name} is not defined");
            }
        }
    }

    #[test]
    fn the_v3_pipeline_ends_in_the_api_and_authenticates_by_strategy() {
        let text = render(Release::parse("2026.2").ok());
        assert!(text.contains("\nkeystone = request_id cors http_proxy_to_wsgi faultwrap sizelimit osprofiler authtoken keystonecontext apiv3\n"), "{text}");
        assert!(text.contains("\nnoauth = request_id cors http_proxy_to_wsgi faultwrap sizelimit osprofiler noauth apiv3\n"));
        assert!(
            text.contains(
                "[app:apiv3]\npaste.app_factory = cinder.api.v3.router:APIRouter.factory\n"
            )
        );
        assert_eq!(
            render(None),
            text,
            "an unparsable release gets the newest data"
        );
    }
}
