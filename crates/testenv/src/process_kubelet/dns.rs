//! A pod's `/etc/resolv.conf`, written as the kubelet writes it from the pod's
//! `dnsPolicy` and `dnsConfig` (`pkg/kubelet/network/dns` upstream).
//!
//! - `ClusterFirst` (the default): the cluster DNS Service's address, the
//!   search path `<ns>.svc.<domain> svc.<domain> <domain>` and `ndots:5`, so
//!   `mariadb` finds `mariadb.<ns>.svc.cluster.local`. A kubelet without a
//!   cluster DNS address (`ProcessKubeletOptions::cluster_dns` unset) treats it
//!   as `Default`, as a real kubelet started without `--cluster-dns` does.
//! - `Default`: the node's resolver. The test environment's node has none (it
//!   has no uplink, and the host's resolver must never be reached from a pod),
//!   so the file names no nameserver: glibc then asks 127.0.0.1 inside the
//!   pod's own network namespace, where nothing listens, and a lookup fails at
//!   once instead of waiting on a server it cannot reach.
//! - `None`: only what `dnsConfig` says.
//!
//! `dnsConfig` is merged into every policy: its nameservers and searches are
//! appended (without repeats) and its options replace those of the same name.

use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::PodSpec;

/// What the kubelet's `--cluster-dns` and `--cluster-domain` say.
#[derive(Clone, Debug)]
pub struct ClusterDns {
    pub server: Ipv4Addr,
    pub domain: String,
}

/// The kubelet's limit on nameservers (glibc reads no more than three).
const MAX_NAMESERVERS: usize = 3;

/// The resolv.conf text for a pod in `namespace`.
pub fn resolv_conf(spec: &PodSpec, namespace: &str, cluster: Option<&ClusterDns>) -> String {
    let host_network = spec.host_network.unwrap_or(false);
    let policy = spec.dns_policy.as_deref().unwrap_or("ClusterFirst");
    let cluster_first = match policy {
        "ClusterFirst" => !host_network,
        "ClusterFirstWithHostNet" => true,
        _ => false,
    };
    let mut nameservers: Vec<String> = Vec::new();
    let mut searches: Vec<String> = Vec::new();
    let mut options: Vec<(String, Option<String>)> = Vec::new();
    match (policy, cluster_first, cluster) {
        ("None", _, _) => {}
        (_, true, Some(dns)) => {
            nameservers.push(dns.server.to_string());
            let domain = &dns.domain;
            searches.extend([
                format!("{namespace}.svc.{domain}"),
                format!("svc.{domain}"),
                domain.clone(),
            ]);
            options.push(("ndots".into(), Some("5".into())));
        }
        // Default, or ClusterFirst without a cluster DNS: the node's resolver,
        // which this node does not have (module docs).
        _ => {}
    }
    if let Some(config) = &spec.dns_config {
        for server in config.nameservers.iter().flatten() {
            if !nameservers.contains(server) {
                nameservers.push(server.clone());
            }
        }
        for search in config.searches.iter().flatten() {
            if !searches.contains(search) {
                searches.push(search.clone());
            }
        }
        for option in config.options.iter().flatten() {
            let Some(name) = option.name.clone() else {
                continue;
            };
            options.retain(|(n, _)| *n != name);
            options.push((name, option.value.clone()));
        }
    }
    nameservers.truncate(MAX_NAMESERVERS);

    let mut text = String::from("# Kubernetes-managed resolv.conf (process kubelet).\n");
    if nameservers.is_empty() {
        text.push_str("# No nameserver: the test environment's node has no resolver of its own.\n");
    }
    if !searches.is_empty() {
        text.push_str(&format!("search {}\n", searches.join(" ")));
    }
    for server in &nameservers {
        text.push_str(&format!("nameserver {server}\n"));
    }
    if !options.is_empty() {
        let rendered: Vec<String> = options
            .iter()
            .map(|(name, value)| match value {
                Some(v) => format!("{name}:{v}"),
                None => name.clone(),
            })
            .collect();
        text.push_str(&format!("options {}\n", rendered.join(" ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodDNSConfig, PodDNSConfigOption};

    fn cluster() -> ClusterDns {
        ClusterDns {
            server: Ipv4Addr::new(10, 0, 0, 10),
            domain: "cluster.local".into(),
        }
    }

    fn lines(text: &str) -> Vec<&str> {
        text.lines().filter(|l| !l.starts_with('#')).collect()
    }

    #[test]
    fn cluster_first_is_the_default_and_names_the_cluster_dns() {
        let text = resolv_conf(&PodSpec::default(), "web", Some(&cluster()));
        assert_eq!(
            lines(&text),
            [
                "search web.svc.cluster.local svc.cluster.local cluster.local",
                "nameserver 10.0.0.10",
                "options ndots:5",
            ]
        );
    }

    #[test]
    fn cluster_first_without_cluster_dns_and_default_name_no_server() {
        let default = PodSpec {
            dns_policy: Some("Default".into()),
            ..PodSpec::default()
        };
        assert!(lines(&resolv_conf(&default, "web", Some(&cluster()))).is_empty());
        assert!(lines(&resolv_conf(&PodSpec::default(), "web", None)).is_empty());
        let host = PodSpec {
            host_network: Some(true),
            ..PodSpec::default()
        };
        assert!(lines(&resolv_conf(&host, "web", Some(&cluster()))).is_empty());
    }

    #[test]
    fn none_takes_only_dns_config_and_config_merges_into_cluster_first() {
        let config = PodDNSConfig {
            nameservers: Some(vec!["10.245.9.9".into(), "10.0.0.10".into()]),
            searches: Some(vec!["example.test".into()]),
            options: Some(vec![
                PodDNSConfigOption {
                    name: Some("ndots".into()),
                    value: Some("2".into()),
                },
                PodDNSConfigOption {
                    name: Some("edns0".into()),
                    value: None,
                },
            ]),
        };
        let none = PodSpec {
            dns_policy: Some("None".into()),
            dns_config: Some(config.clone()),
            ..PodSpec::default()
        };
        assert_eq!(
            lines(&resolv_conf(&none, "web", Some(&cluster()))),
            [
                "search example.test",
                "nameserver 10.245.9.9",
                "nameserver 10.0.0.10",
                "options ndots:2 edns0",
            ]
        );
        let merged = PodSpec {
            dns_config: Some(config),
            ..PodSpec::default()
        };
        assert_eq!(
            lines(&resolv_conf(&merged, "web", Some(&cluster()))),
            [
                "search web.svc.cluster.local svc.cluster.local cluster.local example.test",
                "nameserver 10.0.0.10",
                "nameserver 10.245.9.9",
                "options ndots:2 edns0",
            ]
        );
    }
}
