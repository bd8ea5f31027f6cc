//! The services OpenStack processes need, run as real pods on the process
//! kubelet: MariaDB and RabbitMQ from Debian's packages, each a bare pod with
//! its data in an emptyDir (kept across container restarts). There is no
//! kube-proxy: clients reach them at their pod addresses.

use std::net::Ipv4Addr;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::error::{Result, TestEnvError};
use crate::wait::{until, until_deleted};

pub const MARIADB_IMAGE: &str = "ratchet.test/mariadb:10.11";
pub const RABBITMQ_IMAGE: &str = "ratchet.test/rabbitmq:3.10";
/// Cold starts include RabbitMQ's Erlang boot and MariaDB's first install.
const START_TIMEOUT: Duration = Duration::from_secs(180);

/// A running backing service.
#[derive(Clone, Debug)]
pub struct Backing {
    pub namespace: String,
    pub pod: String,
    pub ip: Ipv4Addr,
    /// The pod as created, to start it again after [`Backing::stop`].
    manifest: Value,
}

/// Credentials every backing service of a test uses (they live in the
/// Secrets the test creates; nothing outside the pod network reaches them).
pub const USER: &str = "openstack";
pub const PASSWORD: &str = "ratchet-test";

impl Backing {
    /// `[database] connection` for `database` (PyMySQL, as the service images carry).
    pub fn mysql_url(&self, database: &str) -> String {
        format!(
            "mysql+pymysql://{USER}:{PASSWORD}@{}:3306/{database}?charset=utf8",
            self.ip
        )
    }

    /// `[DEFAULT] transport_url`.
    pub fn amqp_url(&self) -> String {
        format!("rabbit://{USER}:{PASSWORD}@{}:5672/", self.ip)
    }

    /// Deletes the pod and waits until it is gone (its data goes with it).
    pub async fn stop(&self, client: &Client) -> Result<()> {
        let pods: Api<Pod> = Api::namespaced(client.clone(), &self.namespace);
        pods.delete(&self.pod, &DeleteParams::default()).await?;
        until_deleted(&pods, &self.pod, START_TIMEOUT)
            .await
            .map_err(|e| service_error(&self.pod, e))
    }

    /// Creates the pod again and waits until it is ready; its address may change.
    pub async fn start_again(&mut self, client: &Client) -> Result<()> {
        let started = start(client, &self.namespace, &self.pod, self.manifest.clone()).await?;
        *self = started;
        Ok(())
    }
}

fn service_error(pod: &str, detail: impl std::fmt::Display) -> TestEnvError {
    TestEnvError::Service {
        service: pod.to_string(),
        detail: detail.to_string(),
    }
}

fn manifest(name: &str, container: Value, port: u16) -> Value {
    let mut container = container;
    container["volumeMounts"] = json!([{ "name": "data", "mountPath": "/data" }]);
    container["readinessProbe"] = json!({ "tcpSocket": { "port": port }, "periodSeconds": 1 });
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name, "labels": { "app.kubernetes.io/name": name } },
        "spec": {
            "terminationGracePeriodSeconds": 10,
            "containers": [container],
            "volumes": [{ "name": "data", "emptyDir": {} }],
        }
    })
}

async fn start(client: &Client, namespace: &str, name: &str, manifest: Value) -> Result<Backing> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let pod: Pod = serde_json::from_value(manifest.clone())
        .map_err(|e| service_error(name, format!("manifest: {e}")))?;
    pods.create(&PostParams::default(), &pod).await?;
    let ready = until(&pods, name, START_TIMEOUT, "backing service ready", |p| {
        p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    })
    .await
    .map_err(|e| service_error(name, e))?;
    let ip = ready
        .status
        .and_then(|s| s.pod_ip)
        .and_then(|ip| ip.parse().ok())
        .ok_or_else(|| service_error(name, "ready without an IPv4 address"))?;
    Ok(Backing {
        namespace: namespace.to_string(),
        pod: name.to_string(),
        ip,
        manifest,
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
    let script = "printf '%s' \"$INIT_SQL\" > /tmp/init.sql \
        && mariadb-install-db --user=root --datadir=/data --skip-test-db > /dev/null \
        && exec mariadbd --user=root --datadir=/data --bind-address=0.0.0.0 --port=3306 \
           --socket=/tmp/mysqld.sock --pid-file=/tmp/mysqld.pid --init-file=/tmp/init.sql \
           --skip-log-error --skip-name-resolve --max-connections=500";
    let container = json!({
        "name": "mariadb",
        "image": MARIADB_IMAGE,
        "command": ["/bin/sh", "-c", script],
        "env": [{ "name": "INIT_SQL", "value": init }],
    });
    start(client, namespace, name, manifest(name, container, 3306)).await
}

/// RabbitMQ with [`USER`] as its default user, allowed from other hosts.
pub async fn rabbitmq(client: &Client, namespace: &str, name: &str) -> Result<Backing> {
    let config = format!(
        "loopback_users = none\ndefault_user = {USER}\ndefault_pass = {PASSWORD}\nlisteners.tcp.default = 5672\n"
    );
    let script = "printf '%s' \"$RABBITMQ_CONF\" > /data/rabbitmq.conf \
        && exec /usr/lib/rabbitmq/bin/rabbitmq-server";
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
    start(client, namespace, name, manifest(name, container, 5672)).await
}
