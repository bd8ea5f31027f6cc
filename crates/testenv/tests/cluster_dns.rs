//! Services and DNS under the real pods, as in a real cluster: kube-proxy
//! programs ClusterIPs in the node namespace, CoreDNS answers behind the
//! `kube-dns` Service, and the process kubelet writes each pod's resolv.conf.
//! Needs root (CI runs as root).

mod common;

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use common::{PYTHON, TIMEOUT, create, setup};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::Api;
use kube::api::ListParams;
use ratchet_testenv::process_kubelet::cluster_services::{
    CLUSTER_DNS_IP, ClusterServices, ClusterServicesConfig, resolve_a,
};
use ratchet_testenv::process_kubelet::{network, volume_dir};
use ratchet_testenv::wait::until;
use ratchet_testenv::{ClientNetns, TestEnv};
use serde_json::{Value, json};

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn pod_ip(pod: &Pod) -> Result<Ipv4Addr> {
    Ok(pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .context("no pod IP")?
        .parse()?)
}

fn cluster_ip(service: &Service) -> Result<Ipv4Addr> {
    Ok(service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.as_deref())
        .context("no ClusterIP")?
        .parse()?)
}

/// A Service `name` on port 80 in front of the pods labelled `app` (their port `http`).
fn http_service(name: &str, app: &str) -> Value {
    json!({ "metadata": { "name": name }, "spec": { "selector": { "app": app },
        "ports": [{ "name": "http", "port": 80, "targetPort": "http" }] } })
}

/// A web server answering `/name` with its pod's name, ready while its
/// `ctl` emptyDir holds no `down` file (the test writes it from the host).
fn web_pod_template(app: &str) -> Value {
    json!({
        "metadata": { "labels": { "app": app } },
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [{
                "name": "web", "image": PYTHON,
                "command": ["/bin/sh", "-c",
                    "mkdir -p /tmp/www && hostname > /tmp/www/name && cd /tmp/www && exec python3 -m http.server 8080"],
                "ports": [{ "name": "http", "containerPort": 8080 }],
                "volumeMounts": [{ "name": "ctl", "mountPath": "/ctl" }],
                "readinessProbe": {
                    "exec": { "command": ["/bin/sh", "-c", "test ! -e /ctl/down && test -e /tmp/www/name"] },
                    "periodSeconds": 1, "failureThreshold": 1
                }
            }],
            "volumes": [{ "name": "ctl", "emptyDir": {} }]
        }
    })
}

/// A pod that resolves each name with glibc (as any program in it would),
/// retrying until it answers, and logs `<name> <addresses>` once each; then
/// times `rounds` lookups of the first name and logs `latency p50 p99` (ms).
fn resolver_pod(name: &str, names: &[String], rounds: u32) -> Value {
    let script = r#"
import socket, sys, time
rounds = int(sys.argv[1]); names = sys.argv[2:]
pending = list(names)
while pending:
    for n in list(pending):
        try:
            infos = socket.getaddrinfo(n, 80, socket.AF_INET, socket.SOCK_STREAM)
        except OSError:
            continue
        print(n, ",".join(sorted({i[4][0] for i in infos})), flush=True)
        pending.remove(n)
    time.sleep(0.2)
start = time.monotonic()
try:
    socket.gethostbyname("no-such-service")
    print("missing resolved", flush=True)
except OSError as e:
    print("missing failed after %.0f ms: %s" % ((time.monotonic() - start) * 1000, e), flush=True)
times = []
for _ in range(rounds):
    t = time.monotonic()
    socket.gethostbyname(names[0])
    times.append((time.monotonic() - t) * 1000)
times.sort()
if times:
    print("latency %.2f %.2f" % (times[len(times) // 2], times[int(len(times) * 0.99) - 1 if len(times) >= 100 else -1]), flush=True)
print("done", flush=True)
time.sleep(3600)
"#;
    let mut args = vec![
        "python3".to_string(),
        "-c".into(),
        script.into(),
        rounds.to_string(),
    ];
    args.extend(names.iter().cloned());
    json!({
        "metadata": { "name": name },
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [{ "name": "main", "image": PYTHON, "command": args }]
        }
    })
}

/// Waits until the pod's log holds a line starting with `prefix`; its rest.
async fn log_line(env: &TestEnv, ns: &str, pod: &str, prefix: &str) -> Result<String> {
    let path = env.pod_log(ns, pod, "main")?;
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if let Some(rest) = text
            .lines()
            .find_map(|l| l.strip_prefix(prefix).map(|r| r.trim().to_string()))
        {
            return Ok(rest);
        }
        if Instant::now() >= deadline {
            bail!("no line {prefix:?} in {}:\n{text}", path.display());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn pods_resolve_services_statefulset_pods_and_late_services_by_name() -> Result<()> {
    let (env, client, ns) = setup("dns-names").await?;
    let n = ns.name().to_string();
    let services: Api<Service> = Api::namespaced(client.clone(), &n);
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &n);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &n);
    let web = create(&services, http_service("web", "web")).await?;
    create(
        &services,
        json!({ "metadata": { "name": "db" }, "spec": { "clusterIP": "None", "selector": { "app": "db" },
            "ports": [{ "name": "http", "port": 8080 }] } }),
    )
    .await?;
    create(
        &sets,
        json!({ "metadata": { "name": "db" }, "spec": { "serviceName": "db", "replicas": 2,
            "selector": { "matchLabels": { "app": "db" } }, "template": web_pod_template("db") } }),
    )
    .await?;
    let db0 = until(&pods, "db-0", TIMEOUT, "db-0 ready", is_ready).await?;
    let db1 = until(&pods, "db-1", TIMEOUT, "db-1 ready", is_ready).await?;
    let (db0, db1) = (pod_ip(&db0)?, pod_ip(&db1)?);

    let late = format!("late.{n}.svc");
    let names = vec![
        format!("web.{n}.svc.cluster.local"),
        "web".to_string(),
        format!("db-0.db.{n}.svc"),
        format!("db.{n}.svc"),
        late.clone(),
    ];
    create(&pods, resolver_pod("resolver", &names, 0)).await?;
    let web_ip = cluster_ip(&web)?.to_string();
    ensure!(log_line(env, &n, "resolver", &format!("{} ", names[0])).await? == web_ip);
    // The search path: a bare name is the Service of the pod's own namespace.
    ensure!(log_line(env, &n, "resolver", "web ").await? == web_ip);
    ensure!(log_line(env, &n, "resolver", &format!("{} ", names[2])).await? == db0.to_string());
    // A headless Service resolves to its ready pods' addresses.
    let mut both = [db0.to_string(), db1.to_string()];
    both.sort();
    ensure!(log_line(env, &n, "resolver", &format!("{} ", names[3])).await? == both.join(","));

    // A Service made after the pod started: the pod keeps asking, CoreDNS
    // learns of it from its watch and answers.
    let late_service = create(
        &services,
        json!({ "metadata": { "name": "late" }, "spec": { "selector": { "app": "web" },
            "ports": [{ "port": 80, "targetPort": 8080 }] } }),
    )
    .await?;
    let created = Instant::now();
    ensure!(
        log_line(env, &n, "resolver", &format!("{late} ")).await?
            == cluster_ip(&late_service)?.to_string()
    );
    eprintln!(
        "a new Service resolved in a pod within {:?}",
        created.elapsed()
    );
    // A name that does not exist fails at once (NXDOMAIN), not after a timeout.
    let missing = log_line(env, &n, "resolver", "missing failed after ").await?;
    let ms: f64 = missing
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .parse()?;
    ensure!(ms < 1000.0, "a missing name took {missing}");
    // What the kubelet wrote.
    let pod = pods.get("resolver").await?;
    let uid: String = pod
        .metadata
        .uid
        .unwrap_or_default()
        .chars()
        .take(8)
        .collect();
    let resolv = env
        .pods_dir(&n)?
        .join("resolver")
        .join(format!("resolv-{uid}.conf"));
    let resolv = std::fs::read_to_string(&resolv).with_context(|| resolv.display().to_string())?;
    ensure!(
        resolv.contains(&format!("nameserver {CLUSTER_DNS_IP}"))
            && resolv.contains(&format!(
                "search {n}.svc.cluster.local svc.cluster.local cluster.local"
            ))
            && resolv.contains("options ndots:5"),
        "{resolv}"
    );
    ns.cleanup().await;
    Ok(())
}

/// Names of the pods that answered `count` requests to `addr`, each on a new
/// connection (kube-proxy picks an endpoint per connection); errors counted.
async fn sample(
    client_ns: &ClientNetns,
    addr: SocketAddr,
    count: usize,
) -> Result<(BTreeSet<String>, usize)> {
    let mut names = BTreeSet::new();
    let mut errors = 0;
    for _ in 0..count {
        match client_ns.http_get(addr, "/name").await? {
            Ok((200, body)) => {
                names.insert(body.trim().to_string());
            }
            _ => errors += 1,
        }
    }
    Ok((names, errors))
}

#[tokio::test]
async fn a_cluster_ip_reaches_only_ready_endpoints_and_refuses_without_any() -> Result<()> {
    let (env, client, ns) = setup("dns-proxy").await?;
    let n = ns.name().to_string();
    let services: Api<Service> = Api::namespaced(client.clone(), &n);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &n);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &n);
    let web = create(&services, http_service("web", "web")).await?;
    let empty = create(
        &services,
        json!({ "metadata": { "name": "nobody" }, "spec": { "selector": { "app": "nobody" },
            "ports": [{ "port": 80, "targetPort": 8080 }] } }),
    )
    .await?;
    create(
        &deployments,
        json!({ "metadata": { "name": "web" }, "spec": { "replicas": 2,
            "selector": { "matchLabels": { "app": "web" } }, "template": web_pod_template("web") } }),
    )
    .await?;
    until(&deployments, "web", TIMEOUT, "two ready", |d| {
        d.status.as_ref().and_then(|s| s.ready_replicas) == Some(2)
    })
    .await?;
    let list = pods.list(&ListParams::default().labels("app=web")).await?;
    ensure!(list.items.len() == 2, "{} pods", list.items.len());
    let addr = SocketAddr::from((cluster_ip(&web)?, 80));
    let client_ns = env.client_netns()?;

    // Both pods serve through the ClusterIP; the first request may come before
    // kube-proxy has the endpoints, so wait for both to answer.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let (names, _) = sample(&client_ns, addr, 10).await?;
        if names.len() == 2 {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "only {names:?} answered through {addr}"
        );
    }

    // One pod turns not ready: kube-proxy drops it from the Service.
    let down = &list.items[0];
    let down_name = down.metadata.name.clone().context("pod name")?;
    let uid = down.metadata.uid.clone().context("pod uid")?;
    let ctl = volume_dir(&env.pods_dir(&n)?, &down_name, &uid, "ctl");
    std::fs::write(ctl.join("down"), "")?;
    until(&pods, &down_name, TIMEOUT, "not ready", |p| !is_ready(p)).await?;
    let not_ready = Instant::now();
    // The endpoint slice controller and kube-proxy (min sync 1 s) follow
    // within seconds; from then on no request reaches the pod. A window of
    // 30 requests misses a pod still in the rules once in 2^30, where 10
    // missed it once in a thousand and let a run pass too early.
    let dropped = loop {
        let (names, errors) = sample(&client_ns, addr, 30).await?;
        if !names.contains(&down_name) && errors == 0 {
            break not_ready.elapsed();
        }
        ensure!(
            not_ready.elapsed() < Duration::from_secs(15),
            "{down_name} still served 15 s after turning not ready"
        );
    };
    eprintln!("a pod turned not ready left kube-proxy's rules within {dropped:?}");
    let (names, errors) = sample(&client_ns, addr, 30).await?;
    ensure!(
        errors == 0 && names.len() == 1 && !names.contains(&down_name),
        "after {down_name} turned not ready: {names:?}, {errors} errors"
    );

    // A Service without a ready endpoint refuses at once (kube-proxy's
    // reject rule), as does one whose only endpoint turned not ready.
    for (service, addr) in [
        ("nobody", SocketAddr::from((cluster_ip(&empty)?, 80))),
        ("web", addr),
    ] {
        if service == "web" {
            for pod in &list.items {
                let name = pod.metadata.name.clone().context("pod name")?;
                let uid = pod.metadata.uid.clone().context("pod uid")?;
                std::fs::write(
                    volume_dir(&env.pods_dir(&n)?, &name, &uid, "ctl").join("down"),
                    "",
                )?;
            }
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let started = Instant::now();
            let result = client_ns
                .run(async move { tokio::net::TcpStream::connect(addr).await.map(|_| ()) })
                .await?;
            let took = started.elapsed();
            match result {
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    ensure!(
                        took < Duration::from_millis(500),
                        "{service}: refused after {took:?}"
                    );
                    break;
                }
                other => ensure!(
                    Instant::now() < deadline,
                    "{service} at {addr}: {other:?} instead of a refusal"
                ),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn cluster_ips_and_the_dns_are_unreachable_from_the_host_namespace() -> Result<()> {
    let (env, _client, ns) = setup("dns-host").await?;
    // Asked of the routing table, which sends nothing.
    for addr in [CLUSTER_DNS_IP, Ipv4Addr::new(10, 0, 0, 1)] {
        let route = network::host_route_to(addr);
        if !(route.contains("unreachable") || route.contains("No route to host")) {
            bail!("the host namespace has a route to {addr} ({route}); refusing to connect");
        }
    }
    let table = std::process::Command::new("ip")
        .args(["route", "show", network::SERVICE_CIDR])
        .output()?;
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    ensure!(table.contains("unreachable"), "host routes: {table}");
    // No kube-proxy rule lives in the host namespace.
    let host_tables = std::process::Command::new("nft")
        .args(["list", "tables"])
        .output()?;
    let host_tables = String::from_utf8_lossy(&host_tables.stdout).into_owned();
    ensure!(
        !host_tables.contains("kube-proxy"),
        "the host namespace has kube-proxy's tables: {host_tables}"
    );
    // The DNS from the host fails at once; from a client namespace it answers.
    let name = "kube-dns.kube-system.svc.cluster.local";
    let from_host = resolve_a(
        SocketAddr::from((CLUSTER_DNS_IP, 53)),
        name,
        Duration::from_secs(1),
    )
    .await;
    ensure!(
        from_host.is_err(),
        "the host reached the cluster DNS: {from_host:?}"
    );
    let client_ns = env.client_netns()?;
    let answer = client_ns
        .run(async move {
            resolve_a(
                SocketAddr::from((CLUSTER_DNS_IP, 53)),
                name,
                Duration::from_secs(2),
            )
            .await
        })
        .await??;
    ensure!(answer == [CLUSTER_DNS_IP], "{answer:?}");
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn dns_lookup_latency_from_a_pod() -> Result<()> {
    let (env, client, ns) = setup("dns-latency").await?;
    let n = ns.name().to_string();
    let services: Api<Service> = Api::namespaced(client.clone(), &n);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &n);
    create(
        &services,
        json!({ "metadata": { "name": "web" }, "spec": { "selector": { "app": "web" },
            "ports": [{ "port": 80, "targetPort": 8080 }] } }),
    )
    .await?;
    // The bare name: what a service's configuration would hold; with ndots:5
    // it is asked as web.<ns>.svc.cluster.local first, which answers.
    create(&pods, resolver_pod("latency", &["web".to_string()], 1000)).await?;
    let line = log_line(env, &n, "latency", "latency ").await?;
    eprintln!("DNS lookup latency from a pod over 1000 lookups (ms): p50 p99 = {line}");
    ns.cleanup().await;
    Ok(())
}

fn versioned_web(version: &str, delay_secs: u32) -> Value {
    json!({
        "metadata": { "name": "web" },
        "spec": {
            "replicas": 2,
            "selector": { "matchLabels": { "app": "web" } },
            "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 1, "maxUnavailable": 0 } },
            "template": {
                "metadata": { "labels": { "app": "web" } },
                "spec": {
                    "terminationGracePeriodSeconds": 10,
                    "containers": [{
                        "name": "web", "image": PYTHON,
                        "command": ["/bin/sh", "-c", format!(
                            "sleep {delay_secs}; mkdir -p /tmp/www && echo {version} > /tmp/www/version && cd /tmp/www && exec python3 -m http.server 8080")],
                        "ports": [{ "name": "http", "containerPort": 8080 }],
                        "readinessProbe": { "httpGet": { "path": "/version", "port": "http" }, "periodSeconds": 1 },
                        // As a real Service needs: the pod keeps serving while
                        // kube-proxy drops it, then gets SIGTERM.
                        "lifecycle": { "preStop": { "sleep": { "seconds": 3 } } }
                    }]
                }
            }
        }
    })
}

#[tokio::test]
async fn a_rolling_update_through_a_cluster_ip_fails_no_request() -> Result<()> {
    let (env, client, ns) = setup("dns-roll").await?;
    let n = ns.name().to_string();
    let services: Api<Service> = Api::namespaced(client.clone(), &n);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &n);
    let web = create(&services, http_service("web", "web")).await?;
    create(&deployments, versioned_web("one", 0)).await?;
    let rolled = |d: &Deployment| {
        let generation = d.metadata.generation.unwrap_or_default();
        d.status.as_ref().is_some_and(|s| {
            s.observed_generation == Some(generation)
                && s.updated_replicas == Some(2)
                && s.ready_replicas == Some(2)
                && s.replicas == Some(2)
        })
    };
    until(&deployments, "web", TIMEOUT, "rolled out", rolled).await?;
    let addr = SocketAddr::from((cluster_ip(&web)?, 80));
    let client_ns = env.client_netns()?;
    // kube-proxy may learn of the endpoints a moment after the pods are ready.
    let deadline = Instant::now() + TIMEOUT;
    while !matches!(client_ns.http_get(addr, "/version").await?, Ok((200, _))) {
        ensure!(Instant::now() < deadline, "{addr} never answered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The new pods serve 2 s after they start: only readiness keeps requests
    // from them, and only kube-proxy's rules keep requests from pods going away.
    let spec = versioned_web("two", 2);
    deployments
        .patch(
            "web",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&json!({ "spec": spec["spec"] })),
        )
        .await?;
    let mut versions = BTreeSet::new();
    let mut failures = Vec::new();
    let mut requests = 0u32;
    let deadline = Instant::now() + TIMEOUT * 2;
    loop {
        requests += 1;
        match client_ns.http_get(addr, "/version").await? {
            Ok((200, body)) => {
                versions.insert(body.trim().to_string());
            }
            other => failures.push(format!("{other:?}")),
        }
        let d = deployments.get("web").await?;
        if rolled(&d) && versions.contains("two") {
            // Past the old pods' preStop sleep: they are gone from the rules.
            let quiet = Instant::now() + Duration::from_secs(4);
            while Instant::now() < quiet {
                requests += 1;
                match client_ns.http_get(addr, "/version").await? {
                    Ok((200, body)) => {
                        versions.insert(body.trim().to_string());
                    }
                    other => failures.push(format!("{other:?}")),
                }
            }
            break;
        }
        ensure!(Instant::now() < deadline, "the roll did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ensure!(
        failures.is_empty(),
        "{} of {requests} requests through {addr} failed during the roll: {failures:?}",
        failures.len()
    );
    ensure!(
        versions == BTreeSet::from(["one".to_string(), "two".to_string()]),
        "{versions:?}"
    );
    eprintln!("{requests} requests through the ClusterIP during a roll, none failed");
    ns.cleanup().await;
    Ok(())
}

/// The pod addresses in kube-proxy's rules of the node namespace: those a
/// Service chain's DNAT map sends connections to.
async fn addresses_in_rules(node_netns: &str) -> Result<BTreeSet<Ipv4Addr>> {
    let output = tokio::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            node_netns,
            "nft",
            "list",
            "table",
            "ip",
            "kube-proxy",
        ])
        .output()
        .await?;
    ensure!(
        output.status.success(),
        "nft list table: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    // `dnat ip to numgen random mod 2 map { 0 : 10.245.1.19 . 8080, 1 : … }`
    Ok(text
        .lines()
        .filter_map(|line| line.split_once("dnat ip to numgen")?.1.split_once('{'))
        .flat_map(|(_, elements)| elements.trim_end_matches(['}', ' ']).split(','))
        .filter_map(|element| {
            element
                .split(':')
                .nth(1)?
                .split(" . ")
                .next()?
                .trim()
                .parse()
                .ok()
        })
        .collect())
}

fn many_web(replicas: i32, generation: &str) -> Value {
    json!({
        "metadata": { "name": "many" },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": "many" } },
            "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 2, "maxUnavailable": 0 } },
            "template": {
                "metadata": { "labels": { "app": "many" } },
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{
                        "name": "web", "image": PYTHON,
                        "command": ["python3", "-m", "http.server", "8080"],
                        "env": [{ "name": "GENERATION", "value": generation }],
                        "ports": [{ "name": "http", "containerPort": 8080 }],
                        "readinessProbe": { "tcpSocket": { "port": "http" }, "periodSeconds": 1 }
                    }]
                }
            }
        }
    })
}

/// Figures, printed (docs/benchmarks.md): for every pod a rolling update
/// starts, the time from the test seeing it Ready to its address being in
/// kube-proxy's endpoint map; asserted only that every one gets there.
#[tokio::test]
async fn ready_pods_enter_kube_proxys_rules_over_a_rolling_update() -> Result<()> {
    const REPLICAS: i32 = 8;
    let (env, client, ns) = setup("dns-ready").await?;
    let n = ns.name().to_string();
    let node_netns = env.node_netns()?.to_string();
    let services: Api<Service> = Api::namespaced(client.clone(), &n);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &n);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &n);
    create(&services, http_service("many", "many")).await?;
    create(&deployments, many_web(REPLICAS, "0")).await?;
    let rolled = |d: &Deployment| {
        let generation = d.metadata.generation.unwrap_or_default();
        d.status.as_ref().is_some_and(|s| {
            s.observed_generation == Some(generation)
                && s.updated_replicas == Some(REPLICAS)
                && s.ready_replicas == Some(REPLICAS)
                && s.replicas == Some(REPLICAS)
        })
    };
    until(&deployments, "many", TIMEOUT, "rolled out", rolled).await?;

    // Two rolls; each pod's first Ready sighting and first sighting in the
    // rules, polled every 20 ms.
    let mut ready_at: std::collections::BTreeMap<Ipv4Addr, Instant> = Default::default();
    let mut in_rules_at: std::collections::BTreeMap<Ipv4Addr, Instant> = Default::default();
    let before: BTreeSet<Ipv4Addr> = pods
        .list(&ListParams::default().labels("app=many"))
        .await?
        .items
        .iter()
        .filter_map(|p| pod_ip(p).ok())
        .collect();
    for generation in ["1", "2"] {
        let spec = many_web(REPLICAS, generation);
        deployments
            .patch(
                "many",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&json!({ "spec": spec["spec"] })),
            )
            .await?;
        let deadline = Instant::now() + TIMEOUT * 2;
        loop {
            let now = Instant::now();
            for pod in pods
                .list(&ListParams::default().labels("app=many"))
                .await?
                .items
            {
                if let (true, Ok(ip)) = (is_ready(&pod), pod_ip(&pod)) {
                    ready_at.entry(ip).or_insert(now);
                }
            }
            let now = Instant::now();
            for ip in addresses_in_rules(&node_netns).await? {
                in_rules_at.entry(ip).or_insert(now);
            }
            if rolled(&deployments.get("many").await?) {
                break;
            }
            ensure!(
                Instant::now() < deadline,
                "roll {generation} did not finish"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // The last pods to turn Ready get a few seconds to reach the rules.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut delays: Vec<f64> = loop {
        let now = Instant::now();
        for ip in addresses_in_rules(&node_netns).await? {
            in_rules_at.entry(ip).or_insert(now);
        }
        let started: Vec<_> = ready_at
            .iter()
            .filter(|(ip, _)| !before.contains(ip))
            .collect();
        let missing: Vec<_> = started
            .iter()
            .filter(|(ip, _)| !in_rules_at.contains_key(ip))
            .collect();
        if missing.is_empty() {
            break started
                .iter()
                .map(|(ip, ready)| {
                    in_rules_at[ip]
                        .saturating_duration_since(**ready)
                        .as_secs_f64()
                        * 1000.0
                })
                .collect();
        }
        ensure!(
            Instant::now() < deadline,
            "ready pods never in kube-proxy's rules: {missing:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    ensure!(
        delays.len() == 2 * REPLICAS as usize,
        "{} new pods seen ready, expected {}",
        delays.len(),
        2 * REPLICAS
    );
    delays.sort_by(f64::total_cmp);
    let quantile = |p: f64| delays[((delays.len() - 1) as f64 * p).round() as usize];
    eprintln!(
        "FIGURES ready-to-rules over {} pods (ms): p50 {:.0} p99 {:.0} max {:.0}",
        delays.len(),
        quantile(0.5),
        quantile(0.99),
        quantile(1.0)
    );
    ns.cleanup().await;
    Ok(())
}

/// A cluster DNS that cannot start fails the node's start with its own log
/// (never a silent fallback to pod addresses).
#[tokio::test]
async fn a_cluster_dns_that_cannot_start_fails_the_start_with_its_log() -> Result<()> {
    let (env, client, ns) = setup("dns-fail").await?;
    let dir = tempfile::tempdir()?;
    let broken = dir.path().join("coredns");
    std::fs::write(
        &broken,
        "#!/bin/sh\necho 'plugin/kubernetes: the API server said no' >&2\nexit 1\n",
    )?;
    std::fs::set_permissions(&broken, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let apiserver: SocketAddr = env
        .config()
        .cluster_url
        .authority()
        .context("the API server's URL has no host")?
        .as_str()
        .parse()?;
    let network = network::PodNetwork::create()?;
    let started = ClusterServices::start(
        &client,
        &network,
        ClusterServicesConfig {
            // Never run: CoreDNS starts first.
            kube_proxy: broken.clone(),
            coredns: broken,
            kubeconfig: env.kubeconfig_path().to_path_buf(),
            apiserver,
            node_name: "nowhere".into(),
            dir: dir.path().join("node"),
            start_timeout: Duration::from_secs(10),
        },
    )
    .await;
    let error = match started {
        Ok(_) => bail!("a CoreDNS that exits at once was accepted"),
        Err(e) => e.to_string(),
    };
    ensure!(
        error.contains("coredns") && error.contains("the API server said no"),
        "{error}"
    );
    ns.cleanup().await;
    Ok(())
}

/// A Service name that does not exist: the process's own resolver error ends
/// it at once and shows in its pod's status (`FallbackToLogsOnError`, as
/// Ratchet's Jobs and workloads use), as in a real cluster.
#[tokio::test]
async fn a_missing_service_name_fails_the_process_with_its_own_error_in_the_pod_status()
-> Result<()> {
    let (_env, client, ns) = setup("dns-typo").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    create(
        &pods,
        json!({
            "metadata": { "name": "typo" },
            "spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "main", "image": PYTHON,
                    "terminationMessagePolicy": "FallbackToLogsOnError",
                    "command": ["python3", "-c",
                        "import socket; socket.create_connection(('mariadb-typo', 3306), timeout=30)"]
                }]
            }
        }),
    )
    .await?;
    let ended = until(&pods, "typo", TIMEOUT, "the process ended", |p| {
        p.status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .is_some_and(|phase| phase == "Failed")
    })
    .await?;
    let terminated = ended
        .status
        .and_then(|s| s.container_statuses)
        .and_then(|c| c.into_iter().next())
        .and_then(|c| c.state)
        .and_then(|s| s.terminated)
        .context("no terminated state")?;
    let message = terminated.message.unwrap_or_default();
    ensure!(
        terminated.exit_code == 1 && message.contains("Name or service not known"),
        "exit {}: {message}",
        terminated.exit_code
    );
    ns.cleanup().await;
    Ok(())
}
