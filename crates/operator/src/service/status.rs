//! Between the machine's views and what a resource stores: every service
//! stores the same status fields ([`UpgradeStatus`]: installed and target
//! release, phase, conditions), so these conversions are shared.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use ratchet_api::common::{ImageSpec, PendingEvent, SecretOption, UpgradeStatus};
use ratchet_phase_machine::{ConditionState, DesiredStatus, Profile, SpecView, StatusView};
use ratchet_release::ImageLayout;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::contract::ServiceStatus;
use super::ini::{Sections, managed_option_violations, unsafe_entries};
use super::secret_options;

/// A phase enum's stored name (`""` for none).
fn phase_name<P: Serialize>(phase: &P) -> String {
    serde_json::to_value(phase)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The phase enum value for a name the profile produced (`Default` for none).
fn phase_of<P: DeserializeOwned + Default>(name: &str) -> P {
    serde_json::from_value(serde_json::Value::String(name.to_string())).unwrap_or_default()
}

/// The field every service's extra configuration is in.
pub const EXTRA_CONFIG: &str = "spec.extraConfig";

/// What no service's renderer writes: `extraConfig` text oslo.config would
/// read otherwise than written ([`unsafe_entries`]), and options set from
/// Secrets that have no variable of their own or that `extraConfig` sets too.
pub fn config_refusals<S: super::contract::OpenStackService>(
    extra_config: &Sections,
    secret_options: &[SecretOption],
) -> Vec<String> {
    let mut refused = unsafe_entries(EXTRA_CONFIG, extra_config);
    refused.extend(secret_options::violations::<S>(
        secret_options,
        extra_config,
    ));
    refused
}

/// The spec as the machine sees it: every service has a release, an image,
/// extra configuration, which may not name the options Ratchet sets itself nor
/// hold text oslo.config would read otherwise than written
/// ([`unsafe_entries`]), and options set from Secrets, which must each have a
/// variable of their own and may not be set by extra configuration too. A
/// service adds what else it writes into its file.
pub fn spec_view<S: super::contract::OpenStackService>(
    generation: Option<i64>,
    release: &str,
    image: &ImageSpec,
    image_layout: ImageLayout,
    extra_config: &Sections,
    secret_options: &[SecretOption],
) -> SpecView {
    SpecView {
        image_layout,
        // A service whose spec can allow an outage sets it in its own view.
        allows_outage: false,
        // A service whose spec bounds parallel rolls sets it in its own view.
        max_parallel: 1,
        invalid_config: managed_option_violations(extra_config, S::MANAGED_OPTIONS)
            .into_iter()
            .chain(config_refusals::<S>(extra_config, secret_options))
            .collect(),
        generation: generation.unwrap_or_default(),
        release: release.to_string(),
        image_repository: image.repository.clone(),
        image_tag: image.tag.clone(),
        image_digest: image.digest.clone(),
    }
}

/// The spec as the machine decides on it: the resource's view, plus whatever
/// the renderer refused to write into its configuration file (the same
/// messages are not repeated), so a refused rendering blocks with
/// `InvalidConfig` even where the resource's own checks missed it.
pub fn observed_spec<S: super::contract::OpenStackService>(
    object: &S,
    model: &super::model::ServiceModel,
) -> SpecView {
    let mut spec = object.spec_view();
    if let Err(refused) = &model.config {
        for message in refused {
            if !spec.invalid_config.contains(message) {
                spec.invalid_config.push(message.clone());
            }
        }
    }
    spec
}

/// The status every service stores (a service that stores more implements
/// [`ServiceStatus`] around this one).
impl<P: Serialize + DeserializeOwned + Default> ServiceStatus for UpgradeStatus<P> {
    fn view(&self) -> StatusView {
        StatusView {
            installed_release: self.installed_release.clone(),
            target_release: self.target_release.clone(),
            phase: phase_name(&self.upgrade_phase),
            phase_started_at: self.upgrade_phase_started_at.clone(),
            conditions: self.conditions.iter().map(condition_state).collect(),
        }
    }

    fn decided(_: &Profile, decided: &DesiredStatus) -> Self {
        UpgradeStatus {
            installed_release: decided.installed_release.clone(),
            target_release: decided.target_release.clone(),
            upgrade_phase: phase_of(&decided.phase),
            upgrade_phase_started_at: decided.phase_started_at.clone(),
            rolling_workload: decided.rolling_workload.clone(),
            conditions: conditions(decided),
            observed_generation: Some(decided.observed_generation),
            pending_events: Vec::new(),
        }
    }

    fn pending_events(&self) -> &[PendingEvent] {
        &self.pending_events
    }

    fn pending_events_mut(&mut self) -> &mut Vec<PendingEvent> {
        &mut self.pending_events
    }
}

fn condition_state(c: &Condition) -> ConditionState {
    ConditionState {
        kind: c.type_.clone(),
        status: c.status == "True",
        reason: c.reason.clone(),
        message: c.message.clone(),
        last_transition_time: c.last_transition_time.0.to_string(),
        observed_generation: c.observed_generation,
    }
}

fn conditions(decided: &DesiredStatus) -> Vec<Condition> {
    decided
        .conditions
        .iter()
        .map(|c| Condition {
            type_: c.kind.clone(),
            status: if c.status { "True" } else { "False" }.into(),
            reason: c.reason.clone(),
            message: c.message.clone(),
            last_transition_time: Time(
                c.last_transition_time
                    .parse()
                    .unwrap_or_else(|_| k8s_openapi::jiff::Timestamp::now()),
            ),
            observed_generation: c.observed_generation,
        })
        .collect()
}
