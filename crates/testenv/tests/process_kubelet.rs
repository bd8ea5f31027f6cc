//! Real pods: the process kubelet runs containers as Linux processes beside the
//! simulated kubelet, and the real controllers (ReplicaSet, Job, endpoint
//! slices) react to what those processes do. Needs root (CI runs as root).

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use common::{PYTHON, TIMEOUT, create, setup};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, ContainerStatus, Event, Pod, Secret, Service};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use ratchet_testenv::process_kubelet::images::Catalogue;
use ratchet_testenv::process_kubelet::network;
use ratchet_testenv::wait::{until, until_any, until_deleted};
use ratchet_testenv::{TestEnv, TestNamespace, ready_endpoints};
use serde_json::{Value, json};

const SHELL: &str = "ratchet.test/shell:1";

fn pod_json(name: &str, restart: &str, containers: Value) -> Value {
    json!({
        "metadata": { "name": name },
        "spec": { "restartPolicy": restart, "terminationGracePeriodSeconds": 5, "containers": containers }
    })
}

fn shell(name: &str, script: &str) -> Value {
    json!({ "name": name, "image": SHELL, "command": ["/bin/sh", "-c", script] })
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn container(pod: &Pod, name: &str) -> Option<ContainerStatus> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == name)
        .cloned()
}

fn waiting_reason(pod: &Pod, name: &str) -> Option<(String, String)> {
    let waiting = container(pod, name)?.state?.waiting?;
    Some((waiting.reason?, waiting.message.unwrap_or_default()))
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

async fn finished(api: &Api<Pod>, name: &str) -> Result<Pod> {
    Ok(
        until(api, name, TIMEOUT, &format!("pod {name} to finish"), |p| {
            matches!(phase(p), "Succeeded" | "Failed")
        })
        .await?,
    )
}

fn log(env: &TestEnv, ns: &TestNamespace, pod: &str, container: &str) -> Result<String> {
    let path = env.pod_log(ns.name(), pod, container)?;
    std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
}

#[tokio::test]
async fn env_volumes_and_hostname_are_what_the_spec_says() -> Result<()> {
    let (env, client, ns) = setup("pk-env").await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    create(
        &cms,
        json!({"metadata": {"name": "conf"}, "data": {"a.conf": "alpha", "b": "beta"}}),
    )
    .await?;
    create(
        &secrets,
        json!({"metadata": {"name": "creds"}, "stringData": {"password": "hunter2"}}),
    )
    .await?;
    let script = r#"
echo "env=$PLAIN|$FROM_CM|$FROM_SECRET|$MY_NAME|$MY_NS|$MY_IP|$CONF_b|$REF"
echo "a=$(cat /etc/app/a.conf)"
echo "data=$(readlink /etc/app/..data | cut -c1-4)"
echo "link=$(readlink /etc/app/a.conf)"
echo "sub=$(cat /etc/only-b)"
echo "secret=$(cat /etc/creds/pw) mode=$(stat -L -c %a /etc/creds/pw)"
touch /etc/app/new 2>/dev/null && echo "cm=writable" || echo "cm=read-only"
echo scratch > /scratch/f && echo "empty=$(cat /scratch/f)"
touch /scratch-ro/f 2>/dev/null && echo "ro=writable" || echo "ro=read-only"
echo "host=$(hostname)"
test -e /work && echo "work=visible" || echo "work=hidden"
echo "pwd=$(pwd)"
"#;
    create(
        &pods,
        pod_json(
            "env",
            "Never",
            json!([{
                "name": "main", "image": SHELL, "command": ["/bin/sh", "-c", script],
                "workingDir": "/srv/app",
                "envFrom": [{ "configMapRef": { "name": "conf" }, "prefix": "CONF_" }],
                "env": [
                    { "name": "PLAIN", "value": "plain" },
                    { "name": "REF", "value": "$(PLAIN)-ref" },
                    { "name": "FROM_CM", "valueFrom": { "configMapKeyRef": { "name": "conf", "key": "a.conf" } } },
                    { "name": "FROM_SECRET", "valueFrom": { "secretKeyRef": { "name": "creds", "key": "password" } } },
                    { "name": "MY_NAME", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } },
                    { "name": "MY_NS", "valueFrom": { "fieldRef": { "fieldPath": "metadata.namespace" } } },
                    { "name": "MY_IP", "valueFrom": { "fieldRef": { "fieldPath": "status.podIP" } } }
                ],
                "volumeMounts": [
                    { "name": "conf", "mountPath": "/etc/app" },
                    { "name": "conf", "mountPath": "/etc/only-b", "subPath": "b" },
                    { "name": "creds", "mountPath": "/etc/creds" },
                    { "name": "scratch", "mountPath": "/scratch" },
                    { "name": "scratch", "mountPath": "/scratch-ro", "readOnly": true }
                ]
            }]),
        )
        .as_object()
        .map(|o| {
            let mut o = o.clone();
            o["spec"]["volumes"] = json!([
                { "name": "conf", "configMap": { "name": "conf" } },
                { "name": "creds", "secret": { "secretName": "creds", "defaultMode": 0o400,
                    "items": [{ "key": "password", "path": "pw" }] } },
                { "name": "scratch", "emptyDir": {} }
            ]);
            Value::Object(o)
        })
        .context("pod json")?,
    )
    .await?;
    let pod = finished(&pods, "env").await?;
    let out = log(env, &ns, "env", "main")?;
    ensure!(
        phase(&pod) == "Succeeded",
        "pod {:?}, log:\n{out}",
        pod.status
    );
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .unwrap_or_default();
    let ns_name = ns.name();
    for line in [
        format!("env=plain|alpha|hunter2|env|{ns_name}|{ip}|beta|plain-ref"),
        "a=alpha".into(),
        "data=..20".into(),
        "link=..data/a.conf".into(),
        "sub=beta".into(),
        "secret=hunter2 mode=400".into(),
        "cm=read-only".into(),
        "empty=scratch".into(),
        "ro=read-only".into(),
        "host=env".into(),
        "work=hidden".into(),
        "pwd=/srv/app".into(),
    ] {
        ensure!(
            out.lines().any(|l| l == line),
            "missing {line:?} in log:\n{out}"
        );
    }
    ensure!(ip.starts_with("10.245."), "pod IP {ip}");
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn security_context_sets_identity_and_run_as_non_root_refuses_root() -> Result<()> {
    let (env, client, ns) = setup("pk-sec").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let script = r#"
echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"
grep -E '^(NoNewPrivs|CapBnd|CapEff):' /proc/self/status | tr -s '\t' ' '
touch /rootfile 2>/dev/null && echo "root=writable" || echo "root=read-only"
"#;
    create(
        &pods,
        json!({
            "metadata": { "name": "nonroot" },
            "spec": {
                "restartPolicy": "Never",
                "securityContext": { "runAsNonRoot": true, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 2000 },
                "containers": [{
                    "name": "main", "image": SHELL, "command": ["/bin/sh", "-c", script],
                    "securityContext": { "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                        "capabilities": { "drop": ["ALL"] } }
                }]
            }
        }),
    )
    .await?;
    create(
        &pods,
        json!({
            "metadata": { "name": "root" },
            "spec": {
                "restartPolicy": "Never",
                "securityContext": { "runAsNonRoot": true },
                "containers": [{ "name": "main", "image": SHELL, "command": ["/bin/true"] }]
            }
        }),
    )
    .await?;
    let pod = finished(&pods, "nonroot").await?;
    let out = log(env, &ns, "nonroot", "main")?;
    ensure!(phase(&pod) == "Succeeded", "{:?}\n{out}", pod.status);
    for line in [
        "uid=1000 gid=1000 groups=1000 2000",
        "NoNewPrivs: 1",
        "CapBnd: 0000000000000000",
        "CapEff: 0000000000000000",
        "root=read-only",
    ] {
        ensure!(
            out.lines().any(|l| l == line),
            "missing {line:?} in log:\n{out}"
        );
    }
    let refused = until(&pods, "root", TIMEOUT, "root pod refused", |p| {
        waiting_reason(p, "main").is_some_and(|(r, _)| r == "CreateContainerConfigError")
    })
    .await?;
    let (_, message) = waiting_reason(&refused, "main").context("waiting")?;
    ensure!(
        message.contains("runAsNonRoot and image will run as root"),
        "{message}"
    );
    ensure!(phase(&refused) == "Pending", "{:?}", refused.status);
    ns.cleanup().await;
    Ok(())
}

fn web_deployment(name: &str, replicas: i32, delay_secs: u32, version: &str) -> Value {
    json!({
        "metadata": { "name": name },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 1, "maxUnavailable": 0 } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": {
                    "terminationGracePeriodSeconds": 5,
                    "containers": [{
                        "name": "web", "image": PYTHON,
                        "command": ["/bin/sh", "-c", format!("sleep {delay_secs}; echo $VERSION > /tmp/version; cd /tmp && exec python3 -m http.server 8080")],
                        "env": [{ "name": "VERSION", "value": version }],
                        "ports": [{ "name": "http", "containerPort": 8080 }],
                        "readinessProbe": { "httpGet": { "path": "/version", "port": "http" }, "periodSeconds": 1 }
                    }]
                }
            }
        }
    })
}

fn rolled_out(d: &Deployment, replicas: i32) -> bool {
    let generation = d.metadata.generation.unwrap_or_default();
    d.status.as_ref().is_some_and(|s| {
        s.observed_generation == Some(generation)
            && s.updated_replicas == Some(replicas)
            && s.ready_replicas == Some(replicas)
            && s.available_replicas == Some(replicas)
            && s.replicas == Some(replicas)
    })
}

fn pod_ips(pods: &[Pod]) -> Vec<(String, bool, bool)> {
    pods.iter()
        .filter_map(|p| {
            let ip = p.status.as_ref()?.pod_ip.clone()?;
            Some((ip, is_ready(p), p.metadata.deletion_timestamp.is_some()))
        })
        .collect()
}

#[tokio::test]
async fn two_replicas_bind_one_port_and_pods_reach_each_other() -> Result<()> {
    let (env, client, ns) = setup("pk-web").await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    create(&deployments, web_deployment("web", 2, 0, "one")).await?;
    until(&deployments, "web", TIMEOUT, "web ready", |d| {
        rolled_out(d, 2)
    })
    .await?;
    let list = pods.list(&ListParams::default().labels("app=web")).await?;
    let ips: Vec<String> = pod_ips(&list.items)
        .into_iter()
        .map(|(ip, _, _)| ip)
        .collect();
    ensure!(ips.len() == 2 && ips[0] != ips[1], "{ips:?}");
    let client_ns = env.client_netns()?;
    for ip in &ips {
        let addr: SocketAddr = format!("{ip}:8080").parse()?;
        let (code, body) = client_ns.http_get(addr, "/version").await??;
        ensure!(code == 200 && body.trim() == "one", "{addr}: {code} {body}");
    }
    // A pod reaches another pod's address.
    let fetch = format!(
        "import urllib.request; print(urllib.request.urlopen('http://{}:8080/version', timeout=5).read().decode().strip())",
        ips[0]
    );
    create(
        &pods,
        pod_json(
            "fetch",
            "Never",
            json!([{ "name": "main", "image": PYTHON, "command": ["python3", "-c", fetch] }]),
        ),
    )
    .await?;
    let fetched = finished(&pods, "fetch").await?;
    let out = log(env, &ns, "fetch", "main")?;
    ensure!(
        phase(&fetched) == "Succeeded" && out.trim() == "one",
        "{:?}\n{out}",
        fetched.status
    );
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn readiness_gates_a_rolling_update_and_endpoint_slices_list_only_ready_pods() -> Result<()> {
    let (env, client, ns) = setup("pk-roll").await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns.name());
    let services: Api<Service> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    create(
        &services,
        json!({ "metadata": { "name": "web" }, "spec": { "selector": { "app": "web" },
            "ports": [{ "name": "http", "port": 80, "targetPort": "http" }] } }),
    )
    .await?;
    create(&deployments, web_deployment("web", 2, 0, "one")).await?;
    until(&deployments, "web", TIMEOUT, "web ready", |d| {
        rolled_out(d, 2)
    })
    .await?;

    // The new pods serve only after 3 s: readiness must hold the roll back.
    let patch = web_deployment("web", 2, 3, "two");
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({ "spec": patch["spec"] })),
        )
        .await?;
    let started = Instant::now();
    let client_ns = env.client_netns()?;
    let sampler = async {
        let mut samples = 0u32;
        let mut versions = std::collections::BTreeSet::new();
        loop {
            // Endpoints first: an endpoint listed ready was ready before the pod list is read.
            let ready = ready_endpoints(&client, ns.name(), "web", Some("http")).await?;
            let list = pods.list(&ListParams::default().labels("app=web")).await?;
            let ips = pod_ips(&list.items);
            for addr in &ready {
                let ip = addr.ip().to_string();
                let Some((_, pod_ready, terminating)) = ips.iter().find(|(i, _, _)| *i == ip)
                else {
                    continue; // the pod is already gone
                };
                ensure!(
                    *pod_ready || *terminating,
                    "endpoint {addr} listed ready but its pod is not: {ips:?}"
                );
                if let Ok(Ok((200, body))) = client_ns.http_get(*addr, "/version").await {
                    versions.insert(body.trim().to_string());
                }
            }
            samples += 1;
            let d = deployments.get("web").await?;
            if rolled_out(&d, 2) {
                return Ok::<_, anyhow::Error>((samples, versions));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let (samples, versions) = tokio::time::timeout(TIMEOUT * 2, sampler)
        .await
        .context("the roll did not finish")??;
    let took = started.elapsed();
    // Two new pods, each Ready only after its 3 s start, one at a time (maxSurge 1).
    ensure!(
        took >= Duration::from_secs(6),
        "roll took {took:?}: readiness did not gate it"
    );
    ensure!(samples > 3, "{samples} samples");
    ensure!(
        versions.contains("one"),
        "old pods served during the roll: {versions:?}"
    );
    let ready = ready_endpoints(&client, ns.name(), "web", Some("http")).await?;
    ensure!(ready.len() == 2, "{ready:?}");
    for addr in ready {
        let (code, body) = client_ns.http_get(addr, "/version").await??;
        ensure!(code == 200 && body.trim() == "two", "{addr}: {code} {body}");
    }
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn a_failing_liveness_probe_restarts_the_container() -> Result<()> {
    let (_env, client, ns) = setup("pk-live").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let mut pod = pod_json(
        "live",
        "Always",
        json!([{
            "name": "main", "image": SHELL,
            "command": ["/bin/sh", "-c", "touch /tmp/alive; sleep 2; rm /tmp/alive; exec sleep 1000"],
            "livenessProbe": { "exec": { "command": ["test", "-f", "/tmp/alive"] }, "periodSeconds": 1, "failureThreshold": 1 }
        }]),
    );
    pod["spec"]["terminationGracePeriodSeconds"] = json!(1);
    create(&pods, pod).await?;
    let restarted = until(&pods, "live", TIMEOUT, "a liveness restart", |p| {
        container(p, "main").is_some_and(|c| c.restart_count >= 1)
    })
    .await?;
    let status = container(&restarted, "main").context("status")?;
    let last = status
        .last_state
        .and_then(|s| s.terminated)
        .context("lastState.terminated")?;
    // `sleep` as PID 1 has no SIGTERM handler: killed after the grace period.
    ensure!(last.exit_code == 137, "{last:?}");
    // What the kubelet recorded, as `kubectl describe pod` shows it.
    let events: Api<Event> = Api::namespaced(client.clone(), ns.name());
    for reason in ["Pulled", "Started", "Unhealthy", "Killing"] {
        until_any(&events, TIMEOUT, &format!("a {reason} event"), |e| {
            e.involved_object.name.as_deref() == Some("live") && e.reason.as_deref() == Some(reason)
        })
        .await?;
    }
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn a_job_whose_process_exits_3_fails_after_its_backoff_limit() -> Result<()> {
    let (_env, client, ns) = setup("pk-job").await?;
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    create(
        &jobs,
        json!({
            "metadata": { "name": "boom" },
            "spec": { "backoffLimit": 4, "template": { "spec": { "restartPolicy": "Never",
                "containers": [shell("main", "echo \"boom from $(hostname)\" > /dev/termination-log; exit 3")] } } }
        }),
    )
    .await?;
    let job = until(&jobs, "boom", Duration::from_secs(120), "job Failed", |j| {
        j.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Failed" && c.status == "True"))
    })
    .await?;
    ensure!(
        job.status.as_ref().and_then(|s| s.failed) == Some(5),
        "{:?}",
        job.status
    );
    let list = pods
        .list(&ListParams::default().labels("job-name=boom"))
        .await?;
    ensure!(list.items.len() == 5, "{} pods", list.items.len());
    for pod in &list.items {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let terminated = container(pod, "main")
            .and_then(|c| c.state)
            .and_then(|s| s.terminated)
            .context("terminated")?;
        ensure!(phase(pod) == "Failed", "{name}: {:?}", pod.status);
        ensure!(
            terminated.exit_code == 3 && terminated.reason.as_deref() == Some("Error"),
            "{terminated:?}"
        );
        ensure!(
            terminated.message.as_deref().map(str::trim) == Some(&format!("boom from {name}")),
            "{terminated:?}"
        );
    }
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn termination_honours_sigterm_and_kills_after_the_grace_period() -> Result<()> {
    let (env, client, ns) = setup("pk-term").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    // Ready (an exec probe) only once the SIGTERM handling is in place.
    let polite = "import signal, sys, time\n\
def bye(*_):\n    print('got SIGTERM', flush=True)\n    sys.exit(0)\n\
signal.signal(signal.SIGTERM, bye)\nopen('/tmp/ready', 'w').close()\nwhile True:\n    time.sleep(0.1)\n";
    let ready = json!({ "exec": { "command": ["test", "-f", "/tmp/ready"] }, "periodSeconds": 1 });
    let mut a = pod_json(
        "polite",
        "Always",
        json!([{ "name": "main", "image": PYTHON, "command": ["python3", "-u", "-c", polite],
            "readinessProbe": ready }]),
    );
    a["spec"]["terminationGracePeriodSeconds"] = json!(30);
    let mut b = pod_json(
        "stubborn",
        "Always",
        json!([shell(
            "main",
            "trap 'echo ignoring SIGTERM' TERM; touch /tmp/ready; while true; do sleep 0.2; done"
        )]),
    );
    b["spec"]["containers"][0]["readinessProbe"] = ready;
    b["spec"]["terminationGracePeriodSeconds"] = json!(2);
    create(&pods, a).await?;
    create(&pods, b).await?;
    for name in ["polite", "stubborn"] {
        until(&pods, name, TIMEOUT, "ready", is_ready).await?;
    }
    let timed = |name: &'static str| {
        let pods = pods.clone();
        async move {
            let start = Instant::now();
            pods.delete(name, &DeleteParams::default()).await?;
            until_deleted(&pods, name, TIMEOUT).await?;
            Ok::<_, anyhow::Error>(start.elapsed())
        }
    };
    let (polite_took, stubborn_took) = tokio::try_join!(timed("polite"), timed("stubborn"))?;
    ensure!(
        polite_took < Duration::from_secs(10),
        "polite took {polite_took:?}"
    );
    ensure!(log(env, &ns, "polite", "main")?.contains("got SIGTERM"));
    ensure!(
        stubborn_took >= Duration::from_secs(2) && stubborn_took < Duration::from_secs(12),
        "stubborn took {stubborn_took:?}"
    );
    ensure!(log(env, &ns, "stubborn", "main")?.contains("ignoring SIGTERM"));
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn fallback_to_logs_on_error_reports_the_log_tail() -> Result<()> {
    let (_env, client, ns) = setup("pk-tail").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let mut c = shell("main", "echo first; echo 'last words' >&2; exit 1");
    c["terminationMessagePolicy"] = json!("FallbackToLogsOnError");
    create(&pods, pod_json("tail", "Never", json!([c]))).await?;
    let pod = finished(&pods, "tail").await?;
    let terminated = container(&pod, "main")
        .and_then(|c| c.state)
        .and_then(|s| s.terminated)
        .context("terminated")?;
    ensure!(terminated.exit_code == 1, "{terminated:?}");
    ensure!(
        terminated.message.as_deref() == Some("first\nlast words"),
        "{terminated:?}"
    );
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn pod_addresses_are_unreachable_from_the_host_namespace() -> Result<()> {
    let (env, client, ns) = setup("pk-host").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let mut pod = pod_json(
        "srv",
        "Always",
        json!([{ "name": "main", "image": PYTHON, "command": ["python3", "-m", "http.server", "8080"],
            "readinessProbe": { "tcpSocket": { "port": 8080 }, "periodSeconds": 1 } }]),
    );
    pod["spec"]["terminationGracePeriodSeconds"] = json!(0);
    create(&pods, pod).await?;
    let pod = until(&pods, "srv", TIMEOUT, "ready", is_ready).await?;
    let ip: std::net::Ipv4Addr = pod
        .status
        .and_then(|s| s.pod_ip)
        .context("pod IP")?
        .parse()?;
    // Asked of the routing table, which sends nothing: the pod CIDR must be unreachable.
    let route = network::host_route_to(ip);
    if !(route.contains("unreachable") || route.contains("No route to host")) {
        bail!("the host namespace has a route to {ip} ({route}); refusing to connect");
    }
    // Every pod address, not only this one: the whole pod CIDR is unreachable.
    let table = std::process::Command::new("ip")
        .args(["route", "show", network::POD_CIDR])
        .output()?;
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    ensure!(
        table.contains("unreachable"),
        "host routes for {}: {table}",
        network::POD_CIDR
    );
    let from_host =
        std::net::TcpStream::connect_timeout(&SocketAddr::from((ip, 8080)), Duration::from_secs(1));
    ensure!(from_host.is_err(), "the host reached pod {ip}");
    let client_ns = env.client_netns()?;
    let (code, _) = client_ns
        .http_get(SocketAddr::from((ip, 8080)), "/")
        .await??;
    ensure!(code == 200, "from the client namespace: {code}");
    // Blocking code runs inside the client namespace too.
    let reached = client_ns
        .run_blocking(move || {
            let addr = SocketAddr::from((ip, 8080));
            std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok()
        })
        .await?;
    ensure!(
        reached,
        "a blocking connect from the client namespace failed"
    );
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn bad_input_ends_in_the_status_a_kubelet_would_report() -> Result<()> {
    let (_env, client, ns) = setup("pk-bad").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    create(
        &cms,
        json!({"metadata": {"name": "conf"}, "data": {"present": "1"}}),
    )
    .await?;
    create(
        &pods,
        pod_json(
            "unknown-image",
            "Never",
            json!([{ "name": "main", "image": "docker.io/library/nginx:1.27" }]),
        ),
    )
    .await?;
    create(
        &pods,
        pod_json("missing-key", "Never", json!([{ "name": "main", "image": SHELL, "command": ["true"],
            "env": [{ "name": "X", "valueFrom": { "configMapKeyRef": { "name": "conf", "key": "absent" } } }] }])),
    )
    .await?;
    create(
        &pods,
        pod_json("missing-secret", "Never", json!([{ "name": "main", "image": SHELL, "command": ["true"],
            "env": [{ "name": "X", "valueFrom": { "secretKeyRef": { "name": "nope", "key": "k" } } }] }])),
    )
    .await?;
    create(
        &pods,
        pod_json(
            "no-command",
            "Never",
            json!([{ "name": "main", "image": SHELL, "command": ["no-such-command"] }]),
        ),
    )
    .await?;
    create(
        &pods,
        pod_json(
            "bad-capability",
            "Never",
            json!([{ "name": "main", "image": SHELL, "command": ["true"],
                "securityContext": { "capabilities": { "add": ["NOT_A_CAPABILITY"] } } }]),
        ),
    )
    .await?;
    create(
        &pods,
        pod_json(
            "closed-port",
            "Always",
            json!([{ "name": "main", "image": SHELL, "command": ["sleep", "1000"],
            "readinessProbe": { "tcpSocket": { "port": 9999 }, "periodSeconds": 1 } }]),
        ),
    )
    .await?;

    let expect_waiting = |name: &'static str, reason: &'static str, text: &'static str| {
        let pods = pods.clone();
        async move {
            let pod = until(&pods, name, TIMEOUT, reason, |p| {
                waiting_reason(p, "main").is_some_and(|(r, _)| r == reason)
            })
            .await?;
            let (_, message) = waiting_reason(&pod, "main").context("waiting")?;
            ensure!(message.contains(text), "{name}: {message}");
            ensure!(phase(&pod) == "Pending", "{name}: {:?}", pod.status);
            Ok::<_, anyhow::Error>(())
        }
    };
    expect_waiting(
        "unknown-image",
        "ErrImagePull",
        "not in the process kubelet's image catalogue",
    )
    .await?;
    expect_waiting(
        "missing-key",
        "CreateContainerConfigError",
        "couldn't find key absent in ConfigMap",
    )
    .await?;
    expect_waiting(
        "missing-secret",
        "CreateContainerConfigError",
        "secret \"nope\" not found",
    )
    .await?;

    let pod = finished(&pods, "no-command").await?;
    let terminated = container(&pod, "main")
        .and_then(|c| c.state)
        .and_then(|s| s.terminated)
        .context("terminated")?;
    ensure!(phase(&pod) == "Failed", "{:?}", pod.status);
    ensure!(
        terminated.exit_code == 128 && terminated.reason.as_deref() == Some("StartError"),
        "{terminated:?}"
    );
    ensure!(
        terminated
            .message
            .as_deref()
            .is_some_and(|m| m.contains("executable file not found in $PATH")),
        "{terminated:?}"
    );

    let pod = finished(&pods, "bad-capability").await?;
    let terminated = container(&pod, "main")
        .and_then(|c| c.state)
        .and_then(|s| s.terminated)
        .context("terminated")?;
    ensure!(
        phase(&pod) == "Failed"
            && terminated.exit_code == 128
            && terminated.reason.as_deref() == Some("StartError"),
        "{terminated:?}"
    );
    ensure!(
        terminated
            .message
            .as_deref()
            .is_some_and(|m| m.contains("setpriv: ") && m.contains("capabilit")),
        "{terminated:?}"
    );

    until(&pods, "closed-port", TIMEOUT, "running", |p| {
        container(p, "main").is_some_and(|c| c.state.and_then(|s| s.running).is_some())
    })
    .await?;
    // Never Ready: a bounded wait for readiness must run out.
    let became_ready = until(
        &pods,
        "closed-port",
        Duration::from_secs(4),
        "ready",
        is_ready,
    )
    .await;
    ensure!(
        became_ready.is_err(),
        "a probe on a closed port made the pod Ready"
    );
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn a_venv_image_builds_once_and_runs_as_non_root() -> Result<()> {
    // The build path on its own, into a private cache.
    let cache = tempfile::tempdir()?;
    let text = std::fs::read_to_string(ratchet_testenv::process_kubelet::images::catalogue_path())?;
    let catalogue =
        Catalogue::from_json(&text, cache.path().to_path_buf()).map_err(anyhow::Error::msg)?;
    let cold = Instant::now();
    let image = tokio::task::spawn_blocking(move || {
        let image = catalogue.resolve("ratchet.test/six:1.17");
        (catalogue, image)
    })
    .await?;
    let (catalogue, root) = (image.0, image.1.map_err(|e| anyhow::anyhow!(e.0))?);
    let cold = cold.elapsed();
    let venv = root.venv.clone().context("venv")?;
    ensure!(
        venv.starts_with(cache.path()) && venv.join(".built").is_file(),
        "{venv:?}"
    );
    let warm = Instant::now();
    catalogue
        .resolve("ratchet.test/six:1.17")
        .map_err(|e| anyhow::anyhow!(e.0))?;
    ensure!(warm.elapsed() < cold / 10, "a cached image was rebuilt");

    // And in a real pod, as a non-root user, through the shared cache.
    let (env, client, ns) = setup("pk-venv").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    create(
        &pods,
        json!({
            "metadata": { "name": "six" },
            "spec": { "restartPolicy": "Never", "securityContext": { "runAsUser": 1000, "runAsNonRoot": true },
                "containers": [{ "name": "main", "image": "ratchet.test/six:1.17",
                    "args": ["-c", "import six, sys; print(six.__version__, sys.prefix)"] }] }
        }),
    )
    .await?;
    let pod = until(
        &pods,
        "six",
        Duration::from_secs(600),
        "six finished",
        |p| matches!(phase(p), "Succeeded" | "Failed"),
    )
    .await?;
    let out = log(env, &ns, "six", "main")?;
    ensure!(
        phase(&pod) == "Succeeded" && out.trim() == "1.17.0 /opt/venv",
        "{:?}\n{out}",
        pod.status
    );
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn init_containers_run_first_and_a_startup_probe_gates_readiness() -> Result<()> {
    let (env, client, ns) = setup("pk-init").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    create(
        &pods,
        json!({
            "metadata": { "name": "init" },
            "spec": {
                "terminationGracePeriodSeconds": 0,
                "volumes": [{ "name": "shared", "emptyDir": {} }],
                "initContainers": [{ "name": "prepare", "image": SHELL,
                    "command": ["/bin/sh", "-c", "echo hello from init > /shared/greeting"],
                    "volumeMounts": [{ "name": "shared", "mountPath": "/shared" }] }],
                "containers": [{ "name": "main", "image": SHELL,
                    "command": ["/bin/sh", "-c", "cat /shared/greeting; sleep 2; touch /tmp/started; exec sleep 1000"],
                    "volumeMounts": [{ "name": "shared", "mountPath": "/shared" }],
                    "startupProbe": { "exec": { "command": ["test", "-f", "/tmp/started"] },
                        "periodSeconds": 1, "failureThreshold": 20 } }]
            }
        }),
    )
    .await?;
    create(
        &pods,
        json!({
            "metadata": { "name": "init-fails" },
            "spec": {
                "restartPolicy": "Never",
                "initContainers": [{ "name": "prepare", "image": SHELL, "command": ["/bin/sh", "-c", "exit 2"] }],
                "containers": [{ "name": "main", "image": SHELL, "command": ["true"] }]
            }
        }),
    )
    .await?;
    let mut seen_unstarted = false;
    let ready = until(
        &pods,
        "init",
        TIMEOUT,
        "ready after the startup probe",
        |p| {
            if let Some(c) = container(p, "main")
                && c.state.as_ref().is_some_and(|s| s.running.is_some())
                && c.started == Some(false)
                && !c.ready
            {
                seen_unstarted = true;
            }
            is_ready(p)
        },
    )
    .await?;
    ensure!(
        seen_unstarted,
        "the container was never reported running but not started"
    );
    let init = ready
        .status
        .as_ref()
        .and_then(|s| s.init_container_statuses.as_ref())
        .and_then(|l| l.first())
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref())
        .context("init container terminated")?;
    ensure!(
        init.exit_code == 0 && init.reason.as_deref() == Some("Completed"),
        "{init:?}"
    );
    ensure!(log(env, &ns, "init", "main")?.contains("hello from init"));

    let failed = finished(&pods, "init-fails").await?;
    ensure!(phase(&failed) == "Failed", "{:?}", failed.status);
    ensure!(
        waiting_reason(&failed, "main").is_some_and(|(r, _)| r == "PodInitializing"),
        "{:?}",
        failed.status
    );
    ns.cleanup().await;
    Ok(())
}

fn node_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref()?.node_name.clone()
}

#[tokio::test]
async fn both_kubelets_serve_one_cluster_by_the_binding_rule() -> Result<()> {
    let (env, client, process_ns) = setup("pk-bind").await?;
    let plain_ns = env.namespace(&client, "pk-bind-sim").await?;
    let process_node = env.process_node()?.to_string();
    let in_process: Api<Pod> = Api::namespaced(client.clone(), process_ns.name());
    let in_plain: Api<Pod> = Api::namespaced(client.clone(), plain_ns.name());
    let sleeper = |name: &str, selector: Value| {
        json!({
            "metadata": { "name": name },
            "spec": { "terminationGracePeriodSeconds": 0, "nodeSelector": selector,
                "containers": [{ "name": "main", "image": SHELL, "command": ["sleep", "1000"] }] }
        })
    };
    create(&in_process, sleeper("by-namespace", json!({}))).await?;
    create(&in_plain, sleeper("simulated", json!({}))).await?;
    create(
        &in_plain,
        sleeper(
            "by-selector",
            json!({ "kubernetes.io/hostname": process_node }),
        ),
    )
    .await?;
    let bound = |api: &Api<Pod>, name: &'static str| {
        let api = api.clone();
        async move {
            let pod = until(&api, name, TIMEOUT, "bound and ready", |p| {
                node_of(p).is_some() && is_ready(p)
            })
            .await?;
            Ok::<_, anyhow::Error>((node_of(&pod).unwrap_or_default(), pod))
        }
    };
    let (node, pod) = bound(&in_process, "by-namespace").await?;
    ensure!(node == process_node, "by-namespace on {node}");
    ensure!(
        container(&pod, "main")
            .and_then(|c| c.container_id)
            .is_some_and(|id| id.starts_with("process://"))
    );
    let (node, _) = bound(&in_plain, "by-selector").await?;
    ensure!(node == process_node, "by-selector on {node}");
    let (node, pod) = bound(&in_plain, "simulated").await?;
    ensure!(node == "sim-node-0", "simulated on {node}");
    ensure!(
        container(&pod, "main")
            .and_then(|c| c.container_id)
            .is_some_and(|id| id.starts_with("sim://"))
    );
    plain_ns.cleanup().await;
    process_ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn network_namespaces_go_on_drop_and_orphans_on_the_next_start() -> Result<()> {
    ratchet_testenv::process_kubelet::require_root()?;
    let netns_list = || -> Result<String> {
        let out = std::process::Command::new("ip")
            .args(["netns", "list"])
            .output()?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    // A namespace left by a process that no longer exists.
    let orphan = "ratchet-999999999-0-node";
    let _ = std::process::Command::new("ip")
        .args(["netns", "add", orphan])
        .status()?;
    ensure!(netns_list()?.contains(orphan), "could not plant {orphan}");
    let network = tokio::task::spawn_blocking(network::PodNetwork::create).await??;
    ensure!(
        !netns_list()?.contains(orphan),
        "the orphan survived a start"
    );
    let node = network.node_netns().to_string();
    let pod = network.attach_pod()?;
    let pod_ns = pod.netns.clone();
    ensure!(netns_list()?.contains(&pod_ns) && netns_list()?.contains(&node));
    drop(pod);
    ensure!(
        !netns_list()?.contains(&pod_ns),
        "{pod_ns} outlived its pod"
    );
    drop(network);
    ensure!(
        !netns_list()?.contains(&node),
        "{node} outlived its network"
    );
    Ok(())
}

#[tokio::test]
async fn mariadb_runs_as_a_pod_and_another_pod_queries_it() -> Result<()> {
    let (env, client, ns) = setup("pk-db").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    const MARIADB: &str = "ratchet.test/mariadb:10.11";
    let start = "printf \"CREATE USER 'ratchet'@'%%' IDENTIFIED BY 'secret';\\nGRANT ALL ON *.* TO 'ratchet'@'%%';\\n\" > /tmp/init.sql \
        && mariadb-install-db --user=root --datadir=/data --skip-test-db > /dev/null \
        && exec mariadbd --user=root --datadir=/data --bind-address=0.0.0.0 --port=3306 \
           --socket=/tmp/mysqld.sock --pid-file=/tmp/mysqld.pid --init-file=/tmp/init.sql --skip-log-error";
    let mut db = pod_json(
        "db",
        "Always",
        json!([{ "name": "mariadb", "image": MARIADB, "command": ["/bin/sh", "-c", start],
            "volumeMounts": [{ "name": "data", "mountPath": "/data" }],
            "readinessProbe": { "tcpSocket": { "port": 3306 }, "periodSeconds": 1 } }]),
    );
    db["spec"]["volumes"] = json!([{ "name": "data", "emptyDir": {} }]);
    create(&pods, db).await?;
    let db = until(
        &pods,
        "db",
        Duration::from_secs(120),
        "mariadb ready",
        is_ready,
    )
    .await?;
    let ip = db.status.and_then(|s| s.pod_ip).context("db IP")?;
    create(
        &pods,
        pod_json(
            "query",
            "Never",
            json!([{ "name": "main", "image": MARIADB,
                "command": ["mariadb", "-h", ip, "-uratchet", "-psecret", "--skip-column-names", "-e", "SELECT 6 * 7"] }]),
        ),
    )
    .await?;
    let query = finished(&pods, "query").await?;
    let out = log(env, &ns, "query", "main")?;
    ensure!(
        phase(&query) == "Succeeded" && out.trim() == "42",
        "{:?}\n{out}",
        query.status
    );
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn rabbitmq_runs_as_a_pod_and_speaks_amqp() -> Result<()> {
    let (env, client, ns) = setup("pk-mq").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let mut mq = pod_json(
        "mq",
        "Always",
        json!([{ "name": "rabbitmq", "image": "ratchet.test/rabbitmq:3.10",
            "env": [
                { "name": "HOME", "value": "/data" },
                { "name": "RABBITMQ_MNESIA_BASE", "value": "/data/mnesia" },
                { "name": "RABBITMQ_LOG_BASE", "value": "/data/log" },
                { "name": "RABBITMQ_LOGS", "value": "-" }
            ],
            "volumeMounts": [{ "name": "data", "mountPath": "/data" }],
            "readinessProbe": { "tcpSocket": { "port": 5672 }, "periodSeconds": 1 } }]),
    );
    mq["spec"]["volumes"] = json!([{ "name": "data", "emptyDir": {} }]);
    create(&pods, mq).await?;
    let mq = until(
        &pods,
        "mq",
        Duration::from_secs(120),
        "rabbitmq ready",
        is_ready,
    )
    .await?;
    let ip: std::net::Ipv4Addr = mq.status.and_then(|s| s.pod_ip).context("mq IP")?.parse()?;
    // The AMQP 0-9-1 handshake: the protocol header, answered by a method frame
    // (type 1) carrying connection.start (class 10, method 10).
    let client_ns = env.client_netns()?;
    let frame = client_ns
        .run(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut stream = tokio::net::TcpStream::connect((ip, 5672)).await?;
            stream.write_all(b"AMQP\x00\x00\x09\x01").await?;
            let mut head = [0u8; 11];
            tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut head))
                .await
                .map_err(|_| std::io::Error::other("no answer"))??;
            Ok::<_, std::io::Error>(head)
        })
        .await??;
    ensure!(
        frame[0] == 1 && frame[7..11] == [0, 10, 0, 10],
        "not connection.start: {frame:?}"
    );
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn a_pre_stop_sleep_keeps_the_container_running_before_its_sigterm() -> Result<()> {
    let (env, client, ns) = setup("pk-prestop").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let claims: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        Api::namespaced(client.clone(), ns.name());
    create(
        &claims,
        json!({ "metadata": { "name": "times" },
            "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Mi" } } } }),
    )
    .await?;
    let data = |mut pod: Value| {
        pod["spec"]["containers"][0]["volumeMounts"] =
            json!([{ "name": "data", "mountPath": "/data" }]);
        pod["spec"]["volumes"] =
            json!([{ "name": "data", "persistentVolumeClaim": { "claimName": "times" } }]);
        pod
    };
    // The container records when SIGTERM reached it, in seconds since the epoch.
    let mut serving = data(pod_json(
        "serving",
        "Always",
        json!([shell(
            "main",
            "trap 'date +%s > /data/term; exit 0' TERM; touch /data/up; while true; do sleep 0.1; done"
        )]),
    ));
    serving["spec"]["containers"][0]["lifecycle"] =
        json!({ "preStop": { "sleep": { "seconds": 3 } } });
    create(&pods, serving).await?;
    until(&pods, "serving", TIMEOUT, "serving runs", |p| {
        phase(p) == "Running"
    })
    .await?;
    let deleted_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    pods.delete("serving", &kube::api::DeleteParams::default())
        .await?;
    ratchet_testenv::wait::until_deleted(&pods, "serving", TIMEOUT).await?;
    create(
        &pods,
        data(pod_json(
            "reader",
            "Never",
            json!([shell("main", "cat /data/term")]),
        )),
    )
    .await?;
    let reader = finished(&pods, "reader").await?;
    let out = log(env, &ns, "reader", "main")?;
    let term_at: u64 = out
        .trim()
        .parse()
        .with_context(|| format!("{:?}: {out:?}", reader.status))?;
    // The hook's 3 s run before the signal (whole seconds on both clocks: at least 2).
    ensure!(
        term_at >= deleted_at + 2,
        "SIGTERM at {term_at}, deleted at {deleted_at}: the preStop sleep did not come first"
    );
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn a_non_root_container_writes_tmp_and_dev_shm() -> Result<()> {
    let (env, client, ns) = setup("pk-shm").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let mut pod = pod_json(
        "shm",
        "Never",
        json!([shell(
            "main",
            "touch /tmp/file /dev/shm/sem.file && stat -c '%A %n' /tmp /dev/shm"
        )]),
    );
    pod["spec"]["securityContext"] = json!({ "runAsUser": 4242, "runAsGroup": 4242 });
    create(&pods, pod).await?;
    let done = finished(&pods, "shm").await?;
    let out = log(env, &ns, "shm", "main")?;
    // Python's multiprocessing makes its semaphores in /dev/shm (ironic-conductor
    // creates one at import); both are sticky and world-writable, as runtimes make them.
    ensure!(
        phase(&done) == "Succeeded" && out == "drwxrwxrwt /tmp\ndrwxrwxrwt /dev/shm\n",
        "{:?}\n{out}",
        done.status
    );
    ns.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn a_claim_waits_for_its_object_and_keeps_its_files_across_pods() -> Result<()> {
    let (env, client, ns) = setup("pk-claim").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let with_claim = |name: &str, script: &str| {
        let mut pod = pod_json(name, "Never", json!([shell("main", script)]));
        pod["spec"]["containers"][0]["volumeMounts"] =
            json!([{ "name": "data", "mountPath": "/data" }]);
        pod["spec"]["volumes"] =
            json!([{ "name": "data", "persistentVolumeClaim": { "claimName": "data" } }]);
        pod
    };
    create(
        &pods,
        with_claim("writer", "echo kept > /data/file && ls -ld /tmp"),
    )
    .await?;
    let waiting = until(&pods, "writer", TIMEOUT, "waiting for its claim", |p| {
        waiting_reason(p, "main")
            .is_some_and(|(_, m)| m.contains("persistentvolumeclaim \"data\" not found"))
    })
    .await?;
    ensure!(phase(&waiting) == "Pending", "{:?}", waiting.status);
    let claims: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        Api::namespaced(client.clone(), ns.name());
    create(
        &claims,
        json!({ "metadata": { "name": "data" },
            "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Mi" } } } }),
    )
    .await?;
    let writer = finished(&pods, "writer").await?;
    ensure!(phase(&writer) == "Succeeded", "{:?}", writer.status);
    // /tmp is world-writable and sticky, as images ship it.
    ensure!(
        log(env, &ns, "writer", "main")?.starts_with("drwxrwxrwt"),
        "{}",
        log(env, &ns, "writer", "main")?
    );
    create(&pods, with_claim("reader", "cat /data/file")).await?;
    let reader = finished(&pods, "reader").await?;
    let out = log(env, &ns, "reader", "main")?;
    ensure!(
        phase(&reader) == "Succeeded" && out.trim() == "kept",
        "{:?}\n{out}",
        reader.status
    );
    ns.cleanup().await;
    Ok(())
}

/// The other half of the next test, run by it in a process of its own: starts
/// a non-root container and returns while it runs.
#[tokio::test]
#[ignore = "run by a_container_still_running_when_the_test_process_exits_dies_with_it"]
async fn leaves_a_container_running() -> Result<()> {
    let seconds = std::env::var("RATCHET_TEST_SLEEP")?;
    let (_env, client, ns) = setup("pk-exit").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let mut pod = pod_json(
        "left",
        "Never",
        json!([shell("main", &format!("exec sleep {seconds}"))]),
    );
    // Another user than bubblewrap's: the kernel's parent-death signal does not reach it.
    pod["spec"]["securityContext"] = json!({ "runAsUser": 4242, "runAsGroup": 4242 });
    create(&pods, pod).await?;
    until(&pods, "left", TIMEOUT, "running", |p| phase(p) == "Running").await?;
    Ok(())
}

/// Command lines of the processes that name `needle`.
fn processes_naming(needle: &str) -> Vec<String> {
    let entries = std::fs::read_dir("/proc").into_iter().flatten().flatten();
    entries
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

#[tokio::test]
async fn a_container_still_running_when_the_test_process_exits_dies_with_it() -> Result<()> {
    ratchet_testenv::process_kubelet::require_root()?;
    // A duration no other process names.
    let seconds = format!("3599.{}", std::process::id());
    let exe = std::env::current_exe()?;
    let env_seconds = seconds.clone();
    let status = tokio::task::spawn_blocking(move || {
        std::process::Command::new(exe)
            .args(["--ignored", "--exact", "leaves_a_container_running"])
            .env("RATCHET_TEST_SLEEP", env_seconds)
            .stdout(std::process::Stdio::null())
            .status()
    })
    .await??;
    ensure!(status.success(), "the helper failed: {status}");
    let needle = format!("sleep {seconds}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut left = processes_naming(&needle);
    while !left.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        left = processes_naming(&needle);
    }
    ensure!(left.is_empty(), "outlived the test process: {left:?}");
    Ok(())
}
