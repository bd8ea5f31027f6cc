//! Keystone authentication for load clients, as openstacksdk does it: a
//! project-scoped token from a password login, sent as `X-Auth-Token` with
//! every request, issued again when it nears its expiry or a service refused
//! it (the refused request still counts as failed: a 401 is downtime to a
//! user). Also the few Keystone calls a test makes as the admin to create the
//! users its services and clients log in as.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::{exchange_with_headers, http_client};
use crate::error::{Result, TestEnvError};
use crate::shared::ClientNetns;

/// What a token is good for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// One project of the `Default` domain, by name: what a cloud's users hold.
    Project(String),
    /// The deployment itself (`system: all`): what an operator enrolling
    /// hardware in Ironic holds (its node create asks `system_scope:all`).
    System,
}

impl Scope {
    /// The `scope` of a token request.
    fn request(&self) -> Value {
        match self {
            Scope::Project(name) => {
                json!({ "project": { "name": name, "domain": { "id": "default" } } })
            }
            Scope::System => json!({ "system": { "all": true } }),
        }
    }
}

/// Who a client logs in as: a user in the `Default` domain and its token's
/// scope, at Keystone's ClusterIP.
#[derive(Clone, Debug)]
pub struct Credentials {
    pub keystone: SocketAddr,
    pub user: String,
    pub password: String,
    pub scope: Scope,
}

/// A token is issued again this long before Keystone said it expires.
const EARLY: Duration = Duration::from_secs(60);

/// The token a client sends, and when to stop sending it.
#[derive(Clone, Debug)]
pub struct Token {
    pub value: String,
    pub expires: SystemTime,
    /// The id of the project it is scoped to (none: system-scoped).
    pub project_id: Option<String>,
}

impl Credentials {
    /// `POST /v3/auth/tokens` with a password, in the credentials' scope.
    pub async fn issue(&self, http: &reqwest::Client) -> std::result::Result<Token, String> {
        let body = json!({ "auth": {
            "identity": { "methods": ["password"], "password": { "user": {
                "name": self.user, "domain": { "id": "default" }, "password": self.password } } },
            "scope": self.scope.request(),
        } });
        let what = format!(
            "POST /v3/auth/tokens as {} via {}",
            self.user, self.keystone
        );
        let request = http
            .post(format!("http://{}/v3/auth/tokens", self.keystone))
            .json(&body);
        let (headers, body) = exchange_with_headers(request, &what, 201).await?;
        let value = headers
            .get("X-Subject-Token")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| format!("{what}: no X-Subject-Token"))?
            .to_string();
        let expires = body["token"]["expires_at"]
            .as_str()
            .and_then(parse_expiry)
            .ok_or_else(|| format!("{what}: no readable token.expires_at"))?;
        let project_id = body["token"]["project"]["id"].as_str().map(str::to_string);
        if project_id.is_none() && matches!(self.scope, Scope::Project(_)) {
            return Err(format!("{what}: no token.project.id"));
        }
        Ok(Token {
            value,
            expires,
            project_id,
        })
    }
}

impl Token {
    /// Whether to issue a new one before using it.
    pub fn stale(&self) -> bool {
        SystemTime::now() + EARLY >= self.expires
    }
}

/// Keystone's `expires_at` (`2026-12-05T08:12:34.000000Z`) as a time.
fn parse_expiry(text: &str) -> Option<SystemTime> {
    let at: k8s_openapi::jiff::Timestamp = text.parse().ok()?;
    Some(SystemTime::from(at))
}

/// A user a test creates in Keystone, with its role in a scope (the user,
/// the role and a project created when absent, in the `Default` domain).
#[derive(Clone, Debug)]
pub struct UserGrant {
    pub user: String,
    pub password: String,
    pub scope: Scope,
    pub role: String,
}

/// Logs in as the bootstrap admin at `keystone` (its ClusterIP, from `netns`)
/// and makes each user of `grants` with its role in its scope. Idempotent:
/// what exists is kept (a user's password is set again).
pub async fn create_users(
    netns: &ClientNetns,
    keystone: SocketAddr,
    admin_password: &str,
    grants: &[UserGrant],
) -> Result<()> {
    let admin_password = admin_password.to_string();
    let grants = grants.to_vec();
    netns
        .run(async move {
            let keystone = Admin::login(keystone, &admin_password).await?;
            for grant in &grants {
                let project = match &grant.scope {
                    Scope::Project(name) => Some(
                        keystone
                            .ensure(
                                "projects",
                                name,
                                json!({ "name": name, "domain_id": "default" }),
                            )
                            .await?,
                    ),
                    Scope::System => None,
                };
                let role = keystone
                    .ensure("roles", &grant.role, json!({ "name": grant.role }))
                    .await?;
                let mut body = json!({ "name": grant.user, "domain_id": "default",
                    "password": grant.password });
                if let Some(project) = &project {
                    body["default_project_id"] = json!(project);
                }
                let user = match keystone.find("users", &grant.user).await? {
                    // Only an existing user's password is set: a password
                    // change revokes the user's tokens, to the second, so a
                    // client logging in at once could get a token already void.
                    Some(user) => {
                        keystone
                            .call(
                                reqwest::Method::PATCH,
                                &format!("/users/{user}"),
                                Some(json!({ "user": { "password": grant.password } })),
                                200,
                            )
                            .await?;
                        user
                    }
                    None => keystone.create("users", body).await?,
                };
                let assignment = match &project {
                    Some(project) => format!("/projects/{project}/users/{user}/roles/{role}"),
                    None => format!("/system/users/{user}/roles/{role}"),
                };
                keystone
                    .call(reqwest::Method::PUT, &assignment, None, 204)
                    .await?;
            }
            Ok(())
        })
        .await?
}

/// One endpoint of Keystone's catalogue, with its service's type and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CatalogEndpoint {
    pub service_type: String,
    pub service_name: String,
    pub interface: String,
    pub region: String,
    pub url: String,
}

/// Every endpoint Keystone at `keystone` lists, as the bootstrap admin sees
/// them (`GET /v3/services` and `/v3/endpoints`).
pub async fn catalog(
    netns: &ClientNetns,
    keystone: SocketAddr,
    admin_password: &str,
) -> Result<Vec<CatalogEndpoint>> {
    let admin_password = admin_password.to_string();
    netns
        .run(async move {
            let keystone = Admin::login(keystone, &admin_password).await?;
            let services = keystone
                .call(reqwest::Method::GET, "/services", None, 200)
                .await?;
            let endpoints = keystone
                .call(reqwest::Method::GET, "/endpoints", None, 200)
                .await?;
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            let mut found: Vec<CatalogEndpoint> = endpoints["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| {
                    let service = services["services"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .find(|s| s["id"] == e["service_id"]);
                    CatalogEndpoint {
                        service_type: service.map(|s| text(&s["type"])).unwrap_or_default(),
                        service_name: service.map(|s| text(&s["name"])).unwrap_or_default(),
                        interface: text(&e["interface"]),
                        region: text(&e["region_id"]),
                        url: text(&e["url"]),
                    }
                })
                .collect();
            found.sort();
            Ok(found)
        })
        .await?
}

/// The bootstrap admin, scoped to the `admin` project.
pub fn admin_credentials(keystone: SocketAddr, admin_password: &str) -> Credentials {
    Credentials {
        keystone,
        user: "admin".into(),
        password: admin_password.into(),
        scope: Scope::Project("admin".into()),
    }
}

fn failure(detail: String) -> TestEnvError {
    TestEnvError::Service {
        service: "keystone".into(),
        detail,
    }
}

/// The admin's session with Keystone's API.
struct Admin {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Admin {
    /// Logs in as the bootstrap admin at `keystone` (its ClusterIP).
    async fn login(keystone: SocketAddr, admin_password: &str) -> Result<Admin> {
        let http = http_client()?;
        let token = admin_credentials(keystone, admin_password)
            .issue(&http)
            .await
            .map_err(failure)?;
        Ok(Admin {
            http,
            base: format!("http://{keystone}/v3"),
            token: token.value,
        })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        expect: u16,
    ) -> Result<Value> {
        let what = format!("{method} /v3{path}");
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("X-Auth-Token", &self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        exchange_with_headers(request, &what, expect)
            .await
            .map(|(_, body)| body)
            .map_err(failure)
    }

    /// The id of the `collection` member named `name`, created from `body`
    /// (wrapped in the collection's singular) when there is none.
    async fn ensure(&self, collection: &str, name: &str, body: Value) -> Result<String> {
        match self.find(collection, name).await? {
            Some(id) => Ok(id),
            None => self.create(collection, body).await,
        }
    }

    /// The id of the `collection` member named `name`, if there is one.
    async fn find(&self, collection: &str, name: &str) -> Result<Option<String>> {
        let listed = self
            .call(
                reqwest::Method::GET,
                &format!("/{collection}?name={name}"),
                None,
                200,
            )
            .await?;
        Ok(listed[collection][0]["id"].as_str().map(str::to_string))
    }

    /// Creates a `collection` member from `body`: its id.
    async fn create(&self, collection: &str, body: Value) -> Result<String> {
        let singular = collection.trim_end_matches('s');
        let created = self
            .call(
                reqwest::Method::POST,
                &format!("/{collection}"),
                Some(json!({ singular: body })),
                201,
            )
            .await?;
        created[singular]["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| failure(format!("POST /v3/{collection}: no id in {created}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keystones_expiry_times_are_read_as_utc() {
        let at = parse_expiry("2026-12-05T08:12:34.000000Z").expect("parses");
        let seconds = at
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs();
        // date -u -d 2026-12-05T08:12:34Z +%s
        assert_eq!(seconds, 1_796_458_354);
        assert!(parse_expiry("2026-12-05 08:12:34").is_none());
    }
}
