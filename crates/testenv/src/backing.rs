//! The services OpenStack processes need, run as real pods on the process
//! kubelet: MariaDB, RabbitMQ and memcached from Debian's packages, each a bare pod with
//! its data in an emptyDir (kept across container restarts), behind a
//! ClusterIP Service of the same name. Services reach them as they would in a
//! production cluster: by the Service's DNS name (`mariadb.<ns>.svc`, through
//! CoreDNS and kube-proxy); test probes from a client namespace by its ClusterIP.
//!
//! Each server runs under a small supervisor shell that stops it while a
//! marker file exists in the pod's `control` emptyDir ([`Backing::pause`])
//! and starts it again once the marker is gone ([`Backing::resume`]): an
//! outage of the service that keeps its data and its address, as a database
//! behind a Service would.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret, Service};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::error::{Result, TestEnvError};
use crate::wait::until;

pub const MARIADB_IMAGE: &str = "ratchet.test/mariadb:10.11";
pub const RABBITMQ_IMAGE: &str = "ratchet.test/rabbitmq:3.10";
pub const MEMCACHED_IMAGE: &str = "ratchet.test/memcached:1.6";
pub const MEMCACHED_PORT: u16 = 11211;
/// Cold starts include RabbitMQ's Erlang boot and MariaDB's first install.
const START_TIMEOUT: Duration = Duration::from_secs(180);

/// A running backing service: its pod and the Service in front of it (both
/// named `pod`).
#[derive(Clone, Debug)]
pub struct Backing {
    pub namespace: String,
    pub pod: String,
    /// The Service's ClusterIP, for clients without DNS (test probes).
    pub cluster_ip: Ipv4Addr,
}

/// Credentials every backing service of a test uses (they live in the
/// Secrets the test creates; nothing outside the pod network reaches them).
pub const USER: &str = "openstack";
pub const PASSWORD: &str = "ratchet-test";

impl Backing {
    /// The Service's DNS name as a pod of any namespace finds it.
    pub fn host(&self) -> String {
        format!("{}.{}.svc", self.pod, self.namespace)
    }

    /// `[database] connection` for `database` (PyMySQL, as the service images carry).
    pub fn mysql_url(&self, database: &str) -> String {
        format!(
            "mysql+pymysql://{USER}:{PASSWORD}@{}:3306/{database}?charset=utf8",
            self.host()
        )
    }

    /// `[DEFAULT] transport_url`.
    pub fn amqp_url(&self) -> String {
        format!("rabbit://{USER}:{PASSWORD}@{}:5672/", self.host())
    }

    /// A memcached server as `spec.identity.memcachedServers` lists it.
    pub fn memcached_server(&self) -> String {
        format!("{}:{MEMCACHED_PORT}", self.host())
    }

    /// Stops the server and waits until its pod reports not ready; the pod,
    /// its data and its address stay. `pods_dir` is the process kubelet's
    /// directory of the namespace (`TestEnv::pods_dir`).
    pub async fn pause(&self, client: &Client, pods_dir: &Path) -> Result<()> {
        let marker = self.pause_marker(client, pods_dir).await?;
        std::fs::write(&marker, b"paused\n").map_err(|source| TestEnvError::Io {
            path: marker.clone(),
            source,
        })?;
        self.wait_ready(client, false).await
    }

    /// Starts the server again after [`Backing::pause`] and waits until it is ready.
    pub async fn resume(&self, client: &Client, pods_dir: &Path) -> Result<()> {
        let marker = self.pause_marker(client, pods_dir).await?;
        match std::fs::remove_file(&marker) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(TestEnvError::Io {
                    path: marker,
                    source: e,
                });
            }
            _ => {}
        }
        self.wait_ready(client, true).await
    }

    /// The marker file in the running pod's `control` volume.
    async fn pause_marker(&self, client: &Client, pods_dir: &Path) -> Result<std::path::PathBuf> {
        let pods: Api<Pod> = Api::namespaced(client.clone(), &self.namespace);
        let uid = pods
            .get(&self.pod)
            .await?
            .metadata
            .uid
            .ok_or_else(|| service_error(&self.pod, "the pod has no uid"))?;
        let control = crate::process_kubelet::volume_dir(pods_dir, &self.pod, &uid, "control");
        Ok(control.join(PAUSE_MARKER))
    }

    async fn wait_ready(&self, client: &Client, ready: bool) -> Result<()> {
        let pods: Api<Pod> = Api::namespaced(client.clone(), &self.namespace);
        let what = if ready { "ready again" } else { "not ready" };
        until(&pods, &self.pod, START_TIMEOUT, what, |p| {
            is_ready(p) == ready
        })
        .await
        .map(|_| ())
        .map_err(|e| service_error(&self.pod, e))
    }
}

/// The file whose presence in the `control` volume keeps the server stopped.
const PAUSE_MARKER: &str = "paused";

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// `server` (a command line that runs the server in the foreground) under a
/// supervisor shell: stopped while `/control/paused` exists, started again
/// once it is gone, stopped for good on SIGTERM (the pod's deletion).
fn supervised(server: &str) -> String {
    format!(
        "pid=; trap 'kill $pid 2>/dev/null; wait $pid; exit 0' TERM; \
         while :; do \
           while [ -e /control/{PAUSE_MARKER} ]; do sleep 0.2; done; \
           {server} & pid=$!; \
           while [ ! -e /control/{PAUSE_MARKER} ] && kill -0 $pid 2>/dev/null; do sleep 0.2; done; \
           kill $pid 2>/dev/null; wait $pid; \
         done"
    )
}

fn service_error(pod: &str, detail: impl std::fmt::Display) -> TestEnvError {
    TestEnvError::Service {
        service: pod.to_string(),
        detail: detail.to_string(),
    }
}

fn manifest(name: &str, container: Value, port: u16) -> Value {
    let mut container = container;
    container["volumeMounts"] = json!([
        { "name": "data", "mountPath": "/data" },
        { "name": "control", "mountPath": "/control" },
    ]);
    container["readinessProbe"] = json!({ "tcpSocket": { "port": port }, "periodSeconds": 1 });
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name, "labels": { "app.kubernetes.io/name": name } },
        "spec": {
            "terminationGracePeriodSeconds": 10,
            "containers": [container],
            "volumes": [
                { "name": "data", "emptyDir": {} },
                { "name": "control", "emptyDir": {} },
            ],
        }
    })
}

/// The ClusterIP Service in front of the pod `name`, on `port`.
fn service_manifest(name: &str, port: u16) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": { "name": name },
        "spec": {
            "selector": { "app.kubernetes.io/name": name },
            "ports": [{ "port": port, "targetPort": port }],
        }
    })
}

async fn start(
    client: &Client,
    namespace: &str,
    name: &str,
    manifest: Value,
    port: u16,
) -> Result<Backing> {
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    let service: Service = serde_json::from_value(service_manifest(name, port))
        .map_err(|e| service_error(name, format!("Service: {e}")))?;
    let service = services.create(&PostParams::default(), &service).await?;
    let cluster_ip = service
        .spec
        .and_then(|s| s.cluster_ip)
        .and_then(|ip| ip.parse().ok())
        .ok_or_else(|| service_error(name, "the Service got no IPv4 ClusterIP"))?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let pod: Pod = serde_json::from_value(manifest)
        .map_err(|e| service_error(name, format!("manifest: {e}")))?;
    pods.create(&PostParams::default(), &pod).await?;
    until(
        &pods,
        name,
        START_TIMEOUT,
        "backing service ready",
        is_ready,
    )
    .await
    .map_err(|e| service_error(name, e))?;
    Ok(Backing {
        namespace: namespace.to_string(),
        pod: name.to_string(),
        cluster_ip,
    })
}

/// MariaDB with [`USER`] allowed everything from anywhere and `databases` created.
pub async fn mariadb(
    client: &Client,
    namespace: &str,
    name: &str,
    databases: &[&str],
) -> Result<Backing> {
    let mut init = format!(
        "CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}';\nGRANT ALL ON *.* TO '{USER}'@'%';\n"
    );
    for database in databases {
        init.push_str(&format!("CREATE DATABASE IF NOT EXISTS {database};\n"));
    }
    // The init file is written by the container itself, from its environment.
    let server = supervised(
        "mariadbd --user=root --datadir=/data --bind-address=0.0.0.0 --port=3306 \
         --socket=/tmp/mysqld.sock --pid-file=/tmp/mysqld.pid --init-file=/tmp/init.sql \
         --skip-log-error --max-connections=500",
    );
    let script = format!(
        "printf '%s' \"$INIT_SQL\" > /tmp/init.sql \
         && mariadb-install-db --user=root --datadir=/data --skip-test-db > /dev/null \
         && {server}"
    );
    let container = json!({
        "name": "mariadb",
        "image": MARIADB_IMAGE,
        "command": ["/bin/sh", "-c", script],
        "env": [{ "name": "INIT_SQL", "value": init }],
    });
    start(
        client,
        namespace,
        name,
        manifest(name, container, 3306),
        3306,
    )
    .await
}

/// RabbitMQ with [`USER`] as its default user, allowed from other hosts.
pub async fn rabbitmq(client: &Client, namespace: &str, name: &str) -> Result<Backing> {
    let config = format!(
        "loopback_users = none\ndefault_user = {USER}\ndefault_pass = {PASSWORD}\nlisteners.tcp.default = 5672\n"
    );
    let script = format!(
        "printf '%s' \"$RABBITMQ_CONF\" > /data/rabbitmq.conf && {}",
        supervised("/usr/lib/rabbitmq/bin/rabbitmq-server")
    );
    let container = json!({
        "name": "rabbitmq",
        "image": RABBITMQ_IMAGE,
        "command": ["/bin/sh", "-c", script],
        "env": [
            { "name": "HOME", "value": "/data" },
            { "name": "RABBITMQ_CONF", "value": config },
            { "name": "RABBITMQ_CONFIG_FILE", "value": "/data/rabbitmq.conf" },
            { "name": "RABBITMQ_MNESIA_BASE", "value": "/data/mnesia" },
            { "name": "RABBITMQ_LOG_BASE", "value": "/data/log" },
            { "name": "RABBITMQ_LOGS", "value": "-" },
        ],
    });
    start(
        client,
        namespace,
        name,
        manifest(name, container, 5672),
        5672,
    )
    .await
}

/// memcached, keystonemiddleware's token cache, with 64 MiB.
pub async fn memcached(client: &Client, namespace: &str, name: &str) -> Result<Backing> {
    let server = supervised(&format!(
        "/usr/bin/memcached -u root -l 0.0.0.0 -p {MEMCACHED_PORT} -m 64"
    ));
    let container = json!({
        "name": "memcached",
        "image": MEMCACHED_IMAGE,
        "command": ["/bin/sh", "-c", server],
    });
    start(
        client,
        namespace,
        name,
        manifest(name, container, MEMCACHED_PORT),
        MEMCACHED_PORT,
    )
    .await
}

/// What a resource's spec asks of the environment it runs in, provided:
/// MariaDB when it names a `database` Secret, RabbitMQ when it names a
/// `transport` Secret, every Secret key it refers to, every claim it names.
#[derive(Clone, Debug)]
pub struct Provisioned {
    pub database: Option<Backing>,
    pub bus: Option<Backing>,
    /// (Secret, key) → the value written.
    pub secrets: BTreeMap<(String, String), String>,
}

/// The value of every Secret key a spec refers to other than the database
/// and the bus (an admin password, say).
pub const SECRET_VALUE: &str = "ratchet-test-secret";

/// Reads `spec` (a resource's spec, as JSON) and provides in `namespace` what
/// it refers to: `{ secretName, key }` fields at its top level become Secrets
/// (`database`: a MariaDB database named `service`, beside the databases
/// `also` names, e.g. a Keystone's; `transport`: RabbitMQ; anything else:
/// [`SECRET_VALUE`]), string fields named `…VolumeClaim` anywhere in it
/// become claims (ReadWriteMany, 1 GiB).
pub async fn provision(
    client: &Client,
    namespace: &str,
    service: &str,
    spec: &Value,
    also: &[&str],
) -> Result<Provisioned> {
    let references: Vec<(&str, &str, &str)> = spec
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(field, value)| {
            Some((
                field.as_str(),
                value["secretName"].as_str()?,
                value["key"].as_str()?,
            ))
        })
        .collect();
    let needs = |wanted: &str| references.iter().any(|(field, _, _)| *field == wanted);
    let database = match needs("database") {
        true => {
            let databases: Vec<&str> = std::iter::once(service)
                .chain(also.iter().copied())
                .collect();
            Some(mariadb(client, namespace, "mariadb", &databases).await?)
        }
        false => None,
    };
    let bus = match needs("transport") {
        true => Some(rabbitmq(client, namespace, "rabbitmq").await?),
        false => None,
    };
    let mut secrets = BTreeMap::new();
    for (field, name, key) in references {
        let value = match (field, &database, &bus) {
            ("database", Some(db), _) => db.mysql_url(service),
            ("transport", _, Some(mq)) => mq.amqp_url(),
            _ => SECRET_VALUE.to_string(),
        };
        apply_secret(client, namespace, name, key, &value).await?;
        secrets.insert((name.to_string(), key.to_string()), value);
    }
    let claims_api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
    for claim in claims_named(spec) {
        let object: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": { "name": claim },
            "spec": { "accessModes": ["ReadWriteMany"], "resources": { "requests": { "storage": "1Gi" } } },
        }))
        .map_err(|e| service_error(&claim, format!("claim: {e}")))?;
        claims_api.create(&PostParams::default(), &object).await?;
    }
    Ok(Provisioned {
        database,
        bus,
        secrets,
    })
}

/// Makes the Secret `name` in `namespace` hold `value` at `key` (applied: a
/// second call gives the key a new value).
pub async fn apply_secret(
    client: &Client,
    namespace: &str,
    name: &str,
    key: &str,
    value: &str,
) -> Result<()> {
    let secret: Secret = serde_json::from_value(json!({
        "metadata": { "name": name },
        "stringData": { key: value },
    }))
    .map_err(|e| service_error(name, format!("Secret: {e}")))?;
    Api::<Secret>::namespaced(client.clone(), namespace)
        .patch(
            name,
            &PatchParams::apply("ratchet-testenv"),
            &Patch::Apply(&secret),
        )
        .await?;
    Ok(())
}

/// Every string value of a field named `…VolumeClaim` in `value`, once each.
fn claims_named(value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Object(fields) => {
                for (field, inner) in fields {
                    match inner.as_str() {
                        Some(claim) if field.ends_with("VolumeClaim") => {
                            found.push(claim.to_string())
                        }
                        _ => pending.push(inner),
                    }
                }
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_found_wherever_the_spec_names_them() {
        let spec = json!({
            "backup": { "posixVolumeClaim": "backups" },
            "imageStore": { "fileVolumeClaim": "images" },
            "volumeBackends": [{ "name": "a", "scratchVolumeClaim": "backups" }],
            "database": { "secretName": "db", "key": "connection" },
        });
        assert_eq!(claims_named(&spec), ["backups", "images"]);
        assert!(claims_named(&json!({ "replicas": 2 })).is_empty());
    }
}
