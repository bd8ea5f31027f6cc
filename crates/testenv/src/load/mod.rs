//! Load clients for real services: they keep using a service's API while it
//! upgrades and count every request, so "zero downtime" is a measured number.
//! A client reaches the API as a client inside the cluster does: through its
//! Service's ClusterIP, where kube-proxy picks a ready endpoint for each new
//! connection. Shared here: that address, the Keystone login of a client whose
//! service authenticates ([`auth`]), and the tally of requests.

pub mod auth;
pub mod cinder;
pub mod glance;
pub mod ironic;
pub mod keystone;
pub mod neutron;
pub mod nova;
pub mod placement;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::Service;
use kube::Api;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::{Result, TestEnvError};
use crate::shared::ClientNetns;

/// The ClusterIP and port named `port_name` of the Service `service`.
pub async fn cluster_address(
    client: &kube::Client,
    namespace: &str,
    service: &str,
    port_name: &str,
) -> Result<SocketAddr> {
    let found: Service = Api::namespaced(client.clone(), namespace)
        .get(service)
        .await?;
    let spec = found.spec.unwrap_or_default();
    let failure = |detail: String| TestEnvError::Service {
        service: format!("{namespace}/{service}"),
        detail,
    };
    let ip: Ipv4Addr = spec
        .cluster_ip
        .as_deref()
        .and_then(|ip| ip.parse().ok())
        .ok_or_else(|| failure("no IPv4 ClusterIP (a headless Service?)".into()))?;
    let port = spec
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref() == Some(port_name))
        .and_then(|p| u16::try_from(p.port).ok())
        .ok_or_else(|| failure(format!("no port named {port_name}")))?;
    Ok(SocketAddr::from((ip, port)))
}

/// One request: when it started, how long it took, why it failed.
#[derive(Clone, Debug)]
pub struct RequestRecord {
    pub at: SystemTime,
    pub took: Duration,
    pub failure: Option<String>,
}

/// Every request a load client made, in order.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub records: Vec<RequestRecord>,
}

impl Tally {
    pub fn requests(&self) -> usize {
        self.records.len()
    }

    pub fn failures(&self) -> Vec<&str> {
        self.records
            .iter()
            .filter_map(|r| r.failure.as_deref())
            .collect()
    }

    /// Latencies (ms) of the successful requests started within `[from, to)`.
    pub fn latencies_ms(&self, from: SystemTime, to: SystemTime) -> Vec<f64> {
        self.records
            .iter()
            .filter(|r| r.failure.is_none() && r.at >= from && r.at < to)
            .map(|r| r.took.as_secs_f64() * 1000.0)
            .collect()
    }
}

/// The `p`-quantile (0..=1) of `values` (nearest rank), 0 for none.
pub fn percentile(mut values: Vec<f64>, p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let index = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[index.min(values.len() - 1)]
}

/// A tally a load client writes while others read it (live counters).
pub type SharedTally = Arc<Mutex<Tally>>;

/// A load client running in its network namespace until stopped.
pub struct RunningLoad<Outcome> {
    stop: watch::Sender<Option<Duration>>,
    task: JoinHandle<Outcome>,
    tally: SharedTally,
}

impl<Outcome: Send + 'static> RunningLoad<Outcome> {
    /// Every request so far (live).
    pub fn tally(&self) -> SharedTally {
        self.tally.clone()
    }

    /// Ends the rounds; the client then has up to `settle` to see what it made
    /// reach a final state, and says what became of it.
    pub async fn stop(self, settle: Duration) -> Result<Outcome> {
        let _ = self.stop.send(Some(settle));
        self.task.await.map_err(|e| TestEnvError::Service {
            service: "load client".into(),
            detail: format!("its task: {e}"),
        })
    }
}

/// Starts a client: `run` gets its [`Session`] with the Service `service`
/// (port `api`; logged in with `credentials`, if any) and the stop signal
/// (`Some(settle)` once stopped), and runs in `netns`.
async fn start_load<Outcome, Run>(
    client: &kube::Client,
    netns: &ClientNetns,
    namespace: &str,
    service: &str,
    credentials: Option<auth::Credentials>,
    run: impl FnOnce(Session, watch::Receiver<Option<Duration>>) -> Run,
) -> Result<RunningLoad<Outcome>>
where
    Run: Future<Output = Outcome> + Send + 'static,
    Outcome: Send + 'static,
{
    let session = Session {
        http: http_client()?,
        address: cluster_address(client, namespace, service, "api").await?,
        tally: SharedTally::default(),
        login: credentials.map(|credentials| Login {
            credentials,
            token: Mutex::new(None),
        }),
    };
    let tally = session.tally.clone();
    let (stop, stopped) = watch::channel(None);
    let task = netns.spawn(run(session, stopped));
    Ok(RunningLoad { stop, task, tally })
}

/// What every client's requests go through: one HTTP client, the API
/// Service's ClusterIP and port, the tally, and the Keystone login, if the
/// service authenticates.
struct Session {
    http: reqwest::Client,
    address: SocketAddr,
    tally: SharedTally,
    login: Option<Login>,
}

/// A client's Keystone login and the token it sends now.
struct Login {
    credentials: auth::Credentials,
    token: Mutex<Option<auth::Token>>,
}

impl Login {
    /// The token to send: the current one, or a new one when there is none
    /// or it nears its expiry.
    async fn token(&self, http: &reqwest::Client) -> std::result::Result<String, String> {
        let current = self.token.lock().ok().and_then(|t| t.clone());
        if let Some(token) = current.filter(|t| !t.stale()) {
            return Ok(token.value);
        }
        let token = self.credentials.issue(http).await?;
        let value = token.value.clone();
        if let Ok(mut slot) = self.token.lock() {
            *slot = Some(token);
        }
        Ok(value)
    }

    /// Forgets the token (a service refused it): the next request logs in.
    fn forget(&self) {
        if let Ok(mut slot) = self.token.lock() {
            *slot = None;
        }
    }
}

/// A request about to be sent, and how a failure names it:
/// `<METHOD> <path> via <ClusterIP:port>`.
struct Request {
    builder: reqwest::RequestBuilder,
    what: String,
}

impl Session {
    /// A request for `prefix` + `path` (`/v3`, `/volumes`) through the
    /// Service's ClusterIP (a Service without a ready endpoint refuses it, as
    /// a client would see), with the login's token; failing to get one fails
    /// the request.
    async fn request(
        &self,
        method: reqwest::Method,
        prefix: &str,
        path: &str,
    ) -> std::result::Result<Request, String> {
        let Request { mut builder, what } = self.unauthenticated(method, prefix, path);
        if let Some(login) = &self.login {
            let token = login
                .token(&self.http)
                .await
                .map_err(|e| format!("{what}: no token: {e}"))?;
            builder = builder.header("X-Auth-Token", token);
        }
        Ok(Request { builder, what })
    }

    /// A request without the login's token (one that sends another's).
    fn unauthenticated(&self, method: reqwest::Method, prefix: &str, path: &str) -> Request {
        let address = self.address;
        let what = format!("{method} {path} via {address}");
        let builder = self
            .http
            .request(method, format!("http://{address}{prefix}{path}"));
        Request { builder, what }
    }

    /// Runs `request` and records when it started, how long it took and, if
    /// it failed, why: its result, if it succeeded.
    async fn tallied<T>(
        &self,
        request: impl Future<Output = std::result::Result<T, String>>,
    ) -> Option<T> {
        let at = SystemTime::now();
        let started = std::time::Instant::now();
        let result = request.await;
        // A refused token is issued again for the next request (the failure
        // reads `<what>: 401 …`, `exchange`'s form).
        if let (Some(login), Err(failure)) = (&self.login, &result)
            && failure.contains(": 401 ")
        {
            login.forget();
        }
        if let Ok(mut tally) = self.tally.lock() {
            tally.records.push(RequestRecord {
                at,
                took: started.elapsed(),
                failure: result.as_ref().err().cloned(),
            });
        }
        result.ok()
    }

    /// Marks the last recorded request failed (a body that came back wrong).
    fn fail_last(&self, failure: String) {
        if let Ok(mut tally) = self.tally.lock()
            && let Some(last) = tally.records.last_mut()
        {
            last.failure = Some(failure);
        }
    }

    /// Why the last recorded request failed (empty if it did not).
    fn last_failure(&self) -> String {
        self.tally
            .lock()
            .ok()
            .and_then(|t| t.records.last().and_then(|r| r.failure.clone()))
            .unwrap_or_default()
    }
}

/// An HTTP client for a load. A request fails after 90 s: past the services'
/// own RPC timeout (oslo.messaging's 60 s), so a service that gave up waiting
/// on another answers first and says so. Every request opens its own
/// connection, so kube-proxy spreads the load over the ready pods as it does
/// for many clients, and none rides a kept-alive connection into a pod that
/// has left the Service.
fn http_client() -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| TestEnvError::Service {
            service: "load client".into(),
            detail: format!("HTTP client: {e}"),
        })
}

/// Sends `request` (named `what` in failures): its JSON body (null if none)
/// when the status is `expect`, otherwise the status and the start of the body.
async fn exchange(
    request: reqwest::RequestBuilder,
    what: &str,
    expect: u16,
) -> std::result::Result<serde_json::Value, String> {
    exchange_with_headers(request, what, expect)
        .await
        .map(|(_, body)| body)
}

/// A request that got no answer, with every cause (refused, reset, timed out).
fn transport_failure(what: &str, error: &reqwest::Error) -> String {
    let mut text = format!("{what}: {error}");
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// [`exchange`], with the response's headers too (a Keystone token is one).
async fn exchange_with_headers(
    request: reqwest::RequestBuilder,
    what: &str,
    expect: u16,
) -> std::result::Result<(reqwest::header::HeaderMap, serde_json::Value), String> {
    let response = request
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(|e| transport_failure(what, &e))?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap_or_default();
    if status == expect {
        let body = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        Ok((headers, body))
    } else {
        let text: String = text.chars().take(300).collect();
        Err(format!("{what}: {status} {text}"))
    }
}

/// What a client made through the API, in a few words, and what of it did
/// not survive the upgrade (not in its final state, or not intact), by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Made {
    pub summary: String,
    pub lost: Vec<String>,
}

/// A client's outcome, read as what it made and what was lost.
pub trait Outcome: Send + 'static {
    fn made(&self) -> Made;
}

/// A running client of any service's API (the demo's and the benchmarks'):
/// its live tally and, once stopped, what it made.
pub struct AnyLoad {
    tally: SharedTally,
    stop: Box<dyn FnOnce(Duration) -> BoxedMade + Send>,
}

type BoxedMade = std::pin::Pin<Box<dyn Future<Output = Result<Made>> + Send>>;

impl AnyLoad {
    /// Every request so far (live).
    pub fn tally(&self) -> SharedTally {
        self.tally.clone()
    }

    /// Ends the rounds, gives the client up to `settle` to see what it made
    /// settle, and says what it made.
    pub async fn stop(self, settle: Duration) -> Result<Made> {
        (self.stop)(settle).await
    }
}

impl<O: Outcome> RunningLoad<O> {
    /// The same client, known only by what it makes.
    pub fn any(self) -> AnyLoad {
        AnyLoad {
            tally: self.tally(),
            stop: Box::new(move |settle| {
                Box::pin(async move { self.stop(settle).await.map(|o| o.made()) })
            }),
        }
    }
}

/// Starts the client of `service`'s API (as the registry names it) against
/// the Service `name` in `namespace`, from `netns`, with its defaults;
/// `admin_password` is what the resource's admin password Secret holds
/// (Keystone's). With `keystone` (the ClusterIP of the Keystone the service
/// authenticates through, whose admin password is `admin_password`), the
/// client logs in as a user made for it first: see [`login_for`]. `None`:
/// no client exists for that service.
pub async fn start_for(
    service: &str,
    client: &kube::Client,
    netns: &ClientNetns,
    namespace: &str,
    name: &str,
    admin_password: &str,
    keystone: Option<SocketAddr>,
) -> Result<Option<AnyLoad>> {
    let login = match keystone {
        Some(keystone) => login_for(service, netns, keystone, admin_password).await?,
        None => None,
    };
    let load = match service {
        "cinder" => {
            let options = cinder::CinderLoadOptions {
                login,
                admin: keystone.map(|k| auth::admin_credentials(k, admin_password)),
                ..Default::default()
            };
            cinder::start(client, netns, namespace, name, options)
                .await?
                .any()
        }
        "glance" => {
            let options = glance::GlanceLoadOptions {
                login,
                slow_uploads: Some(glance::SlowUploads::default()),
                ..Default::default()
            };
            glance::start(client, netns, namespace, name, options)
                .await?
                .any()
        }
        "ironic" => {
            let options = ironic::IronicLoadOptions {
                login,
                ..Default::default()
            };
            ironic::start(client, netns, namespace, name, options)
                .await?
                .any()
        }
        "neutron" => {
            let options = neutron::NeutronLoadOptions {
                login,
                ..Default::default()
            };
            neutron::start(client, netns, namespace, name, options)
                .await?
                .any()
        }
        // Its servers' image and flavor are the test's to make: without them
        // `nova::start` refuses.
        "nova" => {
            let options = nova::NovaLoadOptions {
                login,
                admin: keystone.map(|k| auth::admin_credentials(k, admin_password)),
                ..Default::default()
            };
            nova::start(client, netns, namespace, name, options)
                .await?
                .any()
        }
        "placement" => {
            let options = placement::PlacementLoadOptions {
                login,
                ..Default::default()
            };
            placement::start(client, netns, namespace, name, options)
                .await?
                .any()
        }
        "keystone" => {
            let options = keystone::KeystoneLoadOptions {
                admin_password: admin_password.to_string(),
                pause: keystone::DEFAULT_PAUSE,
            };
            keystone::start(client, netns, namespace, name, options)
                .await?
                .any()
        }
        _ => return Ok(None),
    };
    Ok(Some(load))
}

/// The user `service`'s client logs in as, made in the Keystone at
/// `keystone` by its admin: a `member` of the project `demo` for the
/// services a cloud's users call (Cinder, Glance, Neutron, Nova), an `admin`
/// of the system for Ironic, whose node enrolment asks `system_scope:all`,
/// and for Placement the `service` role in project `service`, as Nova's
/// services call it (its policies ask a project-scoped `admin` or
/// `service`). `None` for a service without a client that logs in.
pub async fn login_for(
    service: &str,
    netns: &ClientNetns,
    keystone: SocketAddr,
    admin_password: &str,
) -> Result<Option<auth::Credentials>> {
    let (user, scope, role) = match service {
        "cinder" | "glance" | "neutron" | "nova" => {
            ("demo", auth::Scope::Project("demo".into()), "member")
        }
        "ironic" => ("baremetal-operator", auth::Scope::System, "admin"),
        "placement" => (
            "placement-client",
            auth::Scope::Project("service".into()),
            "service",
        ),
        _ => return Ok(None),
    };
    let grant = auth::UserGrant {
        user: user.into(),
        password: LOGIN_PASSWORD.into(),
        scope: scope.clone(),
        role: role.into(),
    };
    auth::create_users(netns, keystone, admin_password, &[grant]).await?;
    Ok(Some(auth::Credentials {
        keystone,
        user: user.into(),
        password: LOGIN_PASSWORD.into(),
        scope,
    }))
}

/// A number that tells this run's names and ids from an earlier run's (a
/// client's objects outlive it in the service's database).
pub fn run_id() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
        .unwrap_or_default()
}

/// The password of the users [`login_for`] makes.
const LOGIN_PASSWORD: &str = "ratchet-load-user";
