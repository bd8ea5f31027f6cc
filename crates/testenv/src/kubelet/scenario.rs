//! What the simulated kubelet does with a pod: rules chosen by tests.
//!
//! A rule matches pods by namespace, workload (the Job, Deployment or
//! StatefulSet that owns them) and image, and says how they behave. The newest
//! matching rule wins, so a test can narrow a broad rule. The registry is a
//! plain synchronised structure, shared by every runtime and thread.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How a container ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exit {
    pub code: i32,
    /// Written to the container's termination message.
    pub message: String,
}

impl Exit {
    pub fn success() -> Exit {
        Exit {
            code: 0,
            message: String::new(),
        }
    }
    pub fn code(code: i32, message: impl Into<String>) -> Exit {
        Exit {
            code,
            message: message.into(),
        }
    }
}

/// The behaviour of matching pods. Unset delays use the kubelet's defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Behaviour {
    /// Pending → Running.
    pub start_delay: Option<Duration>,
    /// Running → Ready, for long-running pods.
    pub ready_delay: Option<Duration>,
    /// Running → terminated, for Job pods.
    pub run_time: Option<Duration>,
    /// Long-running pods stay Running and never become Ready; Job pods never finish.
    pub hang: bool,
    /// Exits of the first attempts of a Job's pods, in order; later attempts use `then`.
    pub attempts: Vec<Exit>,
    /// Exit of every attempt past `attempts` (success when unset).
    pub then: Option<Exit>,
    /// Long-running pods crash this many times (restartCount grows) before Ready.
    pub crash_times: u32,
}

impl Behaviour {
    /// Never Ready (long-running) or never finishing (Job).
    pub fn hang() -> Behaviour {
        Behaviour {
            hang: true,
            ..Default::default()
        }
    }

    /// Every attempt exits with this code and termination message.
    pub fn always_exit(code: i32, message: impl Into<String>) -> Behaviour {
        Behaviour {
            then: Some(Exit::code(code, message)),
            ..Default::default()
        }
    }

    /// The first `times` attempts exit with `code`, later ones succeed.
    pub fn fail_times(times: usize, code: i32, message: impl Into<String>) -> Behaviour {
        Behaviour {
            attempts: vec![Exit::code(code, message); times],
            ..Default::default()
        }
    }

    /// Successful exit with a termination message.
    pub fn succeed_with_message(message: impl Into<String>) -> Behaviour {
        Behaviour::always_exit(0, message)
    }

    pub fn with_ready_delay(mut self, delay: Duration) -> Behaviour {
        self.ready_delay = Some(delay);
        self
    }

    pub fn with_run_time(mut self, time: Duration) -> Behaviour {
        self.run_time = Some(time);
        self
    }

    pub fn with_crashes(mut self, times: u32) -> Behaviour {
        self.crash_times = times;
        self
    }

    /// The exit of the attempt with this index (0 = first pod).
    pub fn exit_for_attempt(&self, attempt: usize) -> Exit {
        self.attempts
            .get(attempt)
            .cloned()
            .or_else(|| self.then.clone())
            .unwrap_or_else(Exit::success)
    }
}

/// Which pods a rule applies to. Empty fields match anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSelector {
    pub namespace: Option<String>,
    pub workload: Option<String>,
    pub workload_prefix: Option<String>,
    pub image_contains: Option<String>,
    /// A pod annotation and its value; `None` as the value: the annotation is absent.
    pub annotation: Option<(String, Option<String>)>,
}

impl PodSelector {
    /// Pods of one workload (Job, Deployment, StatefulSet) in one namespace.
    pub fn workload(namespace: &str, workload: &str) -> PodSelector {
        PodSelector {
            namespace: Some(namespace.into()),
            workload: Some(workload.into()),
            ..Default::default()
        }
    }

    /// Every pod in a namespace.
    pub fn namespace(namespace: &str) -> PodSelector {
        PodSelector {
            namespace: Some(namespace.into()),
            ..Default::default()
        }
    }

    pub fn with_image_containing(mut self, fragment: &str) -> PodSelector {
        self.image_contains = Some(fragment.into());
        self
    }

    /// Only pods whose annotation `key` has this value (`None`: is absent).
    pub fn with_annotation(mut self, key: &str, value: Option<&str>) -> PodSelector {
        self.annotation = Some((key.into(), value.map(str::to_owned)));
        self
    }

    pub fn with_workload_prefix(mut self, prefix: &str) -> PodSelector {
        self.workload_prefix = Some(prefix.into());
        self
    }

    pub fn matches(&self, pod: &PodIdentity) -> bool {
        self.namespace
            .as_ref()
            .is_none_or(|ns| *ns == pod.namespace)
            && self.workload.as_ref().is_none_or(|w| *w == pod.workload)
            && self
                .workload_prefix
                .as_ref()
                .is_none_or(|p| pod.workload.starts_with(p.as_str()))
            && self
                .image_contains
                .as_ref()
                .is_none_or(|f| pod.images.iter().any(|i| i.contains(f.as_str())))
            && self
                .annotation
                .as_ref()
                .is_none_or(|(key, value)| pod.annotations.get(key) == value.as_ref())
    }
}

/// What the kubelet knows of a pod when choosing its behaviour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodIdentity {
    pub namespace: String,
    /// The owning Job, Deployment or StatefulSet; the pod's own name otherwise.
    pub workload: String,
    pub images: Vec<String>,
    pub annotations: BTreeMap<String, String>,
}

/// A rule's handle, for removing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RuleId(u64);

#[derive(Default)]
struct Registry {
    next_id: u64,
    rules: Vec<(RuleId, PodSelector, Behaviour)>,
    /// Pods started per (rule, namespace, workload): the attempt index.
    attempts: HashMap<(Option<RuleId>, String, String), usize>,
}

/// The rules of one simulated kubelet. Cheap to clone; all clones share them.
#[derive(Clone, Default)]
pub struct Scenarios {
    inner: Arc<Mutex<Registry>>,
}

/// The behaviour chosen for one pod and which attempt of its workload it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub behaviour: Behaviour,
    pub attempt: usize,
}

impl Scenarios {
    fn lock(&self) -> MutexGuard<'_, Registry> {
        // A panic while holding this lock cannot leave the registry half-written
        // (every mutation is a single push/remove), so poisoning is ignored.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a rule; newer rules take precedence over older ones.
    pub fn add(&self, selector: PodSelector, behaviour: Behaviour) -> RuleId {
        let mut reg = self.lock();
        reg.next_id += 1;
        let id = RuleId(reg.next_id);
        reg.rules.push((id, selector, behaviour));
        id
    }

    pub fn remove(&self, id: RuleId) {
        self.lock().rules.retain(|(rule, _, _)| *rule != id);
    }

    /// Removes every rule for a namespace (a finished test's).
    pub fn clear_namespace(&self, namespace: &str) {
        let mut reg = self.lock();
        reg.rules
            .retain(|(_, sel, _)| sel.namespace.as_deref() != Some(namespace));
        reg.attempts.retain(|(_, ns, _), _| ns != namespace);
    }

    /// Chooses the behaviour for a newly started pod and counts the attempt.
    pub fn assign(&self, pod: &PodIdentity) -> Assignment {
        let mut reg = self.lock();
        let chosen = reg
            .rules
            .iter()
            .rev()
            .find(|(_, sel, _)| sel.matches(pod))
            .map(|(id, _, b)| (Some(*id), b.clone()));
        let (rule, behaviour) = chosen.unwrap_or_default();
        let counter = reg
            .attempts
            .entry((rule, pod.namespace.clone(), pod.workload.clone()))
            .or_default();
        let attempt = *counter;
        *counter += 1;
        Assignment { behaviour, attempt }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ns: &str, workload: &str, image: &str) -> PodIdentity {
        PodIdentity {
            namespace: ns.into(),
            workload: workload.into(),
            images: vec![image.into()],
            annotations: BTreeMap::new(),
        }
    }

    #[test]
    fn unmatched_pods_get_the_default_and_succeed() {
        let s = Scenarios::default();
        let a = s.assign(&pod("a", "job", "img:1"));
        assert_eq!(a.behaviour, Behaviour::default());
        assert_eq!(a.behaviour.exit_for_attempt(a.attempt), Exit::success());
    }

    #[test]
    fn fail_times_counts_attempts_per_workload() {
        let s = Scenarios::default();
        s.add(
            PodSelector::workload("a", "job"),
            Behaviour::fail_times(2, 3, "boom"),
        );
        let exits: Vec<i32> = (0..4)
            .map(|_| {
                let a = s.assign(&pod("a", "job", "img"));
                a.behaviour.exit_for_attempt(a.attempt).code
            })
            .collect();
        assert_eq!(exits, vec![3, 3, 0, 0]);
        // Another workload has its own count and no rule.
        let other = s.assign(&pod("a", "other", "img"));
        assert_eq!(other.attempt, 0);
        assert_eq!(other.behaviour, Behaviour::default());
    }

    #[test]
    fn newest_rule_wins_and_removal_restores_older() {
        let s = Scenarios::default();
        s.add(PodSelector::namespace("a"), Behaviour::always_exit(1, ""));
        let narrow = s.add(
            PodSelector::namespace("a").with_image_containing(":2"),
            Behaviour::hang(),
        );
        assert!(s.assign(&pod("a", "d", "img:2")).behaviour.hang);
        assert!(!s.assign(&pod("a", "d", "img:1")).behaviour.hang);
        s.remove(narrow);
        assert_eq!(
            s.assign(&pod("a", "d", "img:2")).behaviour.then,
            Some(Exit::code(1, ""))
        );
    }

    #[test]
    fn clearing_a_namespace_drops_its_rules_only() {
        let s = Scenarios::default();
        s.add(PodSelector::namespace("a"), Behaviour::hang());
        s.add(PodSelector::namespace("b"), Behaviour::hang());
        s.clear_namespace("a");
        assert!(!s.assign(&pod("a", "x", "i")).behaviour.hang);
        assert!(s.assign(&pod("b", "x", "i")).behaviour.hang);
    }

    #[test]
    fn annotation_selector_matches_value_or_absence() {
        let mut pinned = pod("a", "d", "i");
        pinned.annotations.insert("pin".into(), "2026.1".into());
        let unpinned = pod("a", "d", "i");
        let absent = PodSelector::namespace("a").with_annotation("pin", None);
        let equal = PodSelector::namespace("a").with_annotation("pin", Some("2026.1"));
        assert!(absent.matches(&unpinned) && !absent.matches(&pinned));
        assert!(equal.matches(&pinned) && !equal.matches(&unpinned));
    }

    #[test]
    fn prefix_selector() {
        let sel = PodSelector::namespace("a").with_workload_prefix("cinder-volume-");
        assert!(sel.matches(&pod("a", "cinder-volume-lvm", "i")));
        assert!(!sel.matches(&pod("a", "cinder-backup", "i")));
    }
}
