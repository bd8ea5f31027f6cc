//! A profile that pins and the model that says where: one service folder
//! declares both, and the shared renderer only sets the variable named.

use ratchet_operator::registry::{Registry, ServiceFn};
use ratchet_operator::service::OpenStackService;
use ratchet_phase_machine::{Pin, Step};

/// (service, whether its profile pins, the variable its model pins through).
struct PinOf;

impl ServiceFn for PinOf {
    type Output = (bool, Option<String>);
    fn call<S: OpenStackService>(self) -> Self::Output {
        let pins = S::profile().phases.iter().any(|p| {
            matches!(
                p.step,
                Step::Roll {
                    pin: Pin::Installed
                }
            )
        });
        let example: S = super::stored(S::example(S::SERVICE, "2026.1", "repo", 1).manifest);
        let variable = example
            .model(S::SERVICE)
            .pin_option
            .and_then(|o| ratchet_api::oslo::env_name(o.section, o.option));
        (pins, variable)
    }
}

#[test]
fn every_service_that_pins_names_the_option_and_no_other_does() {
    let found: Vec<(&str, bool, Option<String>)> = crate::Services::service_names()
        .into_iter()
        .filter_map(|name| {
            let (pins, variable) = crate::Services::with_service(name, PinOf)?;
            Some((name, pins, variable))
        })
        .collect();
    for (name, pins, variable) in &found {
        assert_eq!(*pins, variable.is_some(), "{name}: {variable:?}");
    }
    let ironic = found.iter().find(|(name, ..)| *name == "ironic");
    assert_eq!(
        ironic.and_then(|(_, _, v)| v.as_deref()),
        Some(crate::ironic::config::ENV_PIN_RELEASE_VERSION)
    );
}
