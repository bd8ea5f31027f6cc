//! The HTTPS server the API server calls for admission (axum + rustls).

use std::net::SocketAddr;

use std::sync::Arc;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use axum_server::tls_rustls::RustlsConfig;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use kube::core::conversion::ConversionReview;

use super::conversion;
use super::validation::validate;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::registry::{Registry, ServiceVisitor};
use crate::service::contract::OpenStackService;

/// Where the API server sends a service's admission reviews:
/// `/validate/<plural>`.
pub fn validation_path<S: OpenStackService>() -> String {
    format!("/validate/{}", S::plural(&()))
}

/// A running webhook server; stops when dropped.
pub struct WebhookServer {
    pub local_addr: SocketAddr,
    handle: axum_server::Handle<SocketAddr>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

/// Serves admission (and conversion) for every service in `R`.
pub async fn start<R: Registry>(
    bind: SocketAddr,
    cert_pem: &str,
    key_pem: &str,
    metrics: Arc<Metrics>,
) -> Result<WebhookServer> {
    // kube and axum-server both use rustls; one process-wide provider (ring).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = RustlsConfig::from_pem(cert_pem.as_bytes().to_vec(), key_pem.as_bytes().to_vec())
        .await
        .map_err(|e| Error::Tls(e.to_string()))?;
    let listener = std::net::TcpListener::bind(bind)
        .map_err(|e| Error::Tls(format!("binding {bind}: {e}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::Tls(e.to_string()))?;
    let local_addr = listener
        .local_addr()
        .map_err(|e| Error::Tls(e.to_string()))?;
    let app = routes::<R>().with_state(metrics);
    let handle = axum_server::Handle::new();
    let server = axum_server::from_tcp_rustls(listener, tls)
        .map_err(|e| Error::Tls(e.to_string()))?
        .handle(handle.clone());
    tokio::spawn(async move {
        if let Err(e) = server.serve(app.into_make_service()).await {
            tracing::error!(error = %e, "webhook server stopped");
        }
    });
    tracing::info!(%local_addr, "admission webhook serving");
    Ok(WebhookServer { local_addr, handle })
}

/// `/validate/<plural>` for every service in `R`, and its conversion's path
/// where it has several versions.
fn routes<R: Registry>() -> Router<Arc<Metrics>> {
    struct Routes(Router<Arc<Metrics>>);
    impl ServiceVisitor for Routes {
        fn visit<S: OpenStackService>(&mut self) {
            let mut router = std::mem::take(&mut self.0);
            router = router.route(&validation_path::<S>(), post(review::<S>));
            if let Some(conversion) = S::conversion() {
                router = router.route(conversion.path, post(convert::<S>));
            }
            self.0 = router;
        }
    }
    let mut routes = Routes(Router::new());
    R::visit_all(&mut routes);
    routes.0
}

async fn review<S: OpenStackService>(
    State(metrics): State<Arc<Metrics>>,
    Json(review): Json<AdmissionReview<S>>,
) -> Json<AdmissionReview<DynamicObject>> {
    let started = std::time::Instant::now();
    let answer = admission_answer(review);
    metrics.admission(S::SERVICE, started.elapsed());
    answer
}

/// The answer to one admission review (pure apart from the log line); public
/// for the fuzz target that feeds it arbitrary reviews.
pub fn admission_answer<S: OpenStackService>(
    review: AdmissionReview<S>,
) -> Json<AdmissionReview<DynamicObject>> {
    let request: AdmissionRequest<S> = match review.try_into() {
        Ok(request) => request,
        Err(e) => {
            return Json(
                AdmissionResponse::invalid(format!("malformed AdmissionReview: {e}")).into_review(),
            );
        }
    };
    let response = AdmissionResponse::from(&request);
    let Some(new) = request.object.as_ref() else {
        return Json(response.into_review());
    };
    let violations = validate(new, request.old_object.as_ref());
    let response = if violations.is_empty() {
        let mut response = response;
        let warnings = new.warnings();
        if !warnings.is_empty() {
            response.warnings = Some(warnings);
        }
        response
    } else {
        tracing::info!(kind = S::SERVICE, name = %request.name, namespace = ?request.namespace, violations = ?violations, "admission denied");
        response.deny(violations.join("; "))
    };
    Json(response.into_review())
}

async fn convert<S: OpenStackService>(
    State(metrics): State<Arc<Metrics>>,
    Json(review): Json<ConversionReview>,
) -> Json<ConversionReview> {
    let started = std::time::Instant::now();
    let answer = conversion::answer::<S>(review);
    let label = format!("{}-conversion", S::SERVICE);
    metrics.admission(&label, started.elapsed());
    Json(answer)
}
