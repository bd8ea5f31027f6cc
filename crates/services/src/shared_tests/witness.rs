use ratchet_operator::testing::witness::expected_upgrade;

#[test]
fn the_expected_upgrade_is_read_off_the_profile() {
    let (phases, jobs, events) = expected_upgrade(&crate::cinder::profile::profile(), &[]);
    assert_eq!(
        phases,
        ["Expanding", "Migrating", "RollingUpdate", "Contracting"]
    );
    assert_eq!(jobs, ["db-expand", "db-migrate", "db-contract"]);
    assert_eq!(
        events,
        [
            "UpgradeInitiated",
            "ExpandComplete",
            "MigrateComplete",
            "DeploymentRolloutComplete",
            "UpgradeCheckCompleted",
            "UpgradeComplete"
        ]
    );
}
