#[test]
fn every_example_resource_finds_its_secrets() {
    let secrets = ratchet_operator::install::example_secrets::<crate::Services>();
    let named: Vec<(&str, &str)> = secrets
        .iter()
        .map(|(name, key, _)| (name.as_str(), key.as_str()))
        .collect();
    assert_eq!(
        named,
        [
            ("cinder-db", "connection"),
            ("cinder-mq", "transport_url"),
            ("ironic-db", "connection"),
            ("ironic-mq", "transport_url"),
            ("keystone-admin", "password"),
            ("keystone-db", "connection"),
            ("glance-db", "connection"),
            ("placement-db", "connection"),
            ("nova-api-db", "connection"),
            ("nova-cell0-db", "connection"),
            ("nova-cell1-db", "connection"),
            ("nova-cell1-mq", "transport_url"),
            ("nova-mq", "transport_url"),
            ("neutron-db", "connection"),
            ("neutron-mq", "transport_url"),
        ]
    );
}
