//! A service's pin strategy, declared in its folder, and what its profile and
//! workloads do: a pinned roll only with an option to set, a second roll only
//! for processes that pin themselves, and nothing of either without a pin.

use ratchet_operator::registry::{Registry, ServiceFn};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::model::PinStrategy;
use ratchet_operator::service::peers::Peers;
use ratchet_phase_machine::{Pin, Step};

/// What a service's pieces say about pinning.
struct PinOf;

struct Pinning {
    strategy: PinStrategy,
    /// Whether the profile has a roll pinned to the installed release.
    pinned_roll: bool,
    /// Whether a workload restarts once the release is promoted.
    second_roll: bool,
}

impl ServiceFn for PinOf {
    type Output = Pinning;
    fn call<S: OpenStackService>(self) -> Self::Output {
        let pinned_roll = S::profile().phases.iter().any(|p| {
            matches!(
                p.step,
                Step::Roll {
                    pin: Pin::Installed
                }
            )
        });
        let example: S = super::stored(S::example(S::SERVICE, "2026.1", "repo", 1).manifest);
        let model = example.model(S::SERVICE, &Peers::none());
        Pinning {
            strategy: model.pin,
            pinned_roll,
            second_roll: model.workloads.iter().any(|w| w.carries_installed_release),
        }
    }
}

#[test]
fn every_profile_and_its_workloads_follow_the_service_s_pin_strategy() {
    for name in crate::Services::service_names() {
        let Pinning {
            strategy,
            pinned_roll,
            second_roll,
        } = crate::Services::with_service(name, PinOf).expect("registered");
        let (expect_pinned_roll, expect_second_roll) = match strategy {
            PinStrategy::None => (false, false),
            PinStrategy::ReleasedBySecondRoll => (false, true),
            PinStrategy::OptionSetThenRemoved(_) => (true, false),
        };
        assert_eq!(
            (pinned_roll, second_roll),
            (expect_pinned_roll, expect_second_roll),
            "{name}: {strategy:?} but (pinned roll, second roll) = ({pinned_roll}, {second_roll})"
        );
    }
}

#[test]
fn each_service_s_strategy_is_its_own() {
    let strategy = |name| {
        crate::Services::with_service(name, PinOf)
            .expect("registered")
            .strategy
    };
    assert_eq!(
        strategy("ironic")
            .option()
            .and_then(|o| ratchet_api::oslo::env_name(o.section, o.option)),
        Some(crate::ironic::config::ENV_PIN_RELEASE_VERSION.to_string())
    );
    assert_eq!(strategy("cinder"), PinStrategy::ReleasedBySecondRoll);
    for name in ["keystone", "glance", "placement"] {
        assert_eq!(strategy(name), PinStrategy::None, "{name}");
    }
}
