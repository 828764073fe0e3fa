//! The `label_join:` section of a model config (issue 23): a good section
//! and every error, each reported with its path.

use std::time::Duration;

use fex::Plan;
use fex::config::{KeySource, LateActions, TimeUnit};

const MODEL: &str = "name: ranker\nfeatures:\n  - {name: item_id, kind: sparse}\n";

fn with(section: &str) -> Result<Plan, String> {
    Plan::from_yaml(&format!("{MODEL}label_join:\n{section}")).map_err(|e| e.to_string())
}

#[test]
fn a_full_section_loads() {
    let plan = with(
        "  request_id: {line_id: req_id}\n  user_id: {feature: f_user}\n  \
         request_time: {line_id: req_time, unit: ms}\n  item_id: {line_id: item_id}\n  \
         refresh: {feature: f_refresh}\n  emit: {requests_back: 0, after: 2h}\n  \
         watermark_delay: 500ms\n  late_actions: correction\n  retention: 90s\n",
    )
    .unwrap();
    let join = plan.label_join().unwrap();
    assert!(matches!(&join.request_id, KeySource::LineId { name, field } if name == "req_id" && field.number == 5));
    assert_eq!(join.user_id, KeySource::Feature("f_user".into()));
    assert!(matches!(&join.request_time.source, KeySource::LineId { name, .. } if name == "req_time"));
    assert_eq!(join.request_time.unit, TimeUnit::Millis);
    assert!(matches!(&join.item_id, KeySource::LineId { field, .. } if field.number == 4));
    assert_eq!(join.refresh, Some(KeySource::Feature("f_refresh".into())));
    assert_eq!(join.requests_back, 0);
    assert_eq!(join.after, Duration::from_secs(7200));
    assert_eq!(join.watermark_delay, Duration::from_millis(500));
    assert_eq!(join.late_actions, LateActions::Correction);
    assert_eq!(join.retention, Duration::from_secs(90));
}

#[test]
fn defaults_fill_the_rest() {
    let plan = with("  user_id: {line_id: uid}\n  item_id: {feature: item_id}\n  emit: {after: 30m}\n").unwrap();
    let join = plan.label_join().unwrap();
    assert_eq!((&join.request_id, &join.request_time.source), (&KeySource::Log, &KeySource::Log));
    assert_eq!(join.refresh, None);
    assert_eq!(join.requests_back, 5);
    assert_eq!(join.after, Duration::from_secs(1800));
    assert_eq!(join.watermark_delay, Duration::from_secs(60));
    assert_eq!(join.late_actions, LateActions::Drop);
    assert_eq!(join.retention, Duration::from_secs(3600));
    assert!(Plan::from_yaml(MODEL).unwrap().label_join().is_none());
}

#[test]
fn a_feature_time_defaults_to_seconds_and_log_is_accepted_by_name() {
    let plan = with(
        "  request_id: log\n  request_time: {feature: ts}\n  user_id: {line_id: user_id}\n  \
         item_id: {line_id: item_id}\n  emit: {after: 1h}\n",
    )
    .unwrap();
    let join = plan.label_join().unwrap();
    assert_eq!(
        (&join.request_time.source, join.request_time.unit),
        (&KeySource::Feature("ts".into()), TimeUnit::Seconds)
    );
}

/// Each case: the section's text and a message it must give.
#[test]
fn every_problem_is_named_with_its_path() {
    let base = "  user_id: {line_id: uid}\n  item_id: {line_id: item_id}\n";
    for (section, expected) in [
        ("  emit: {after: 1m}\n", "label_join.user_id: missing"),
        ("  user_id: {line_id: uid}\n  emit: {after: 1m}\n", "label_join.item_id: missing"),
        (&format!("{base}  emit: {{requests_back: 3}}\n"), "label_join.emit.after: missing"),
        (base, "label_join.emit.after: missing"),
        (&format!("{base}  emit: {{after: 0s}}\n"), "label_join.emit.after: must be more than 0"),
        (
            &format!("{base}  emit: {{after: 3 days}}\n"),
            "label_join.emit.after: found \"3 days\": unknown unit \"days\"",
        ),
        (&format!("{base}  emit: {{after: soon}}\n"), "label_join.emit.after: found \"soon\", expected a duration"),
        (
            &format!("{base}  emit: {{after: 1m, requests_back: 1001}}\n"),
            "label_join.emit.requests_back: found 1001, allowed 0..=1000",
        ),
        (
            &format!("{base}  emit: {{after: 1m, every: 2}}\n"),
            "label_join.emit: unknown key \"every\"; allowed: requests_back, after",
        ),
        (&format!("{base}  emit: {{after: 1m}}\n  window: 1m\n"), "label_join: unknown key \"window\""),
        (
            &format!("{base}  emit: {{after: 1m}}\n  watermark_delay: 1x\n"),
            "label_join.watermark_delay: found \"1x\": unknown unit \"x\"",
        ),
        (
            &format!("{base}  emit: {{after: 1m}}\n  retention: 9000h\n"),
            "label_join.retention: found \"9000h\", allowed 0 to 168h",
        ),
        (
            &format!("{base}  emit: {{after: 1m}}\n  late_actions: keep\n"),
            "label_join.late_actions: found \"keep\", expected drop or correction",
        ),
        (
            "  user_id: {line_id: userid}\n  item_id: {line_id: item_id}\n  emit: {after: 1m}\n",
            "label_join.user_id.line_id: unknown LineId field \"userid\"; use one of uid,",
        ),
        (
            "  user_id: {line_id: actions}\n  item_id: {line_id: item_id}\n  emit: {after: 1m}\n",
            "label_join.user_id.line_id: \"actions\" is repeated int32; expected a singular integer or string field",
        ),
        (
            "  user_id: {line_id: sample_rate}\n  item_id: {line_id: item_id}\n  emit: {after: 1m}\n",
            "label_join.user_id.line_id: \"sample_rate\" is float",
        ),
        (
            &format!("{base}  request_time: {{line_id: req_id}}\n  emit: {{after: 1m}}\n"),
            "label_join.request_time.line_id: \"req_id\" is string; expected a singular integer field",
        ),
        (
            &format!("{base}  request_time: {{feature: ts, unit: ns}}\n  emit: {{after: 1m}}\n"),
            "label_join.request_time.unit: found \"ns\", expected s, ms or us",
        ),
        (
            "  user_id: {line_id: uid, unit: s}\n  item_id: {line_id: item_id}\n  emit: {after: 1m}\n",
            "label_join.user_id.unit: is only for request_time",
        ),
        (
            "  user_id: {feature: \"user id\"}\n  item_id: {line_id: item_id}\n  emit: {after: 1m}\n",
            "label_join.user_id.feature: \"user id\" is not a feature name",
        ),
        (
            "  user_id: {feature: a, line_id: uid}\n  item_id: {line_id: item_id}\n  emit: {after: 1m}\n",
            "label_join.user_id: give either line_id or feature, not both",
        ),
        (
            "  user_id: log\n  item_id: {line_id: item_id}\n  emit: {after: 1m}\n",
            "label_join.user_id: found log, expected {line_id: FIELD} or {feature: NAME}",
        ),
        (
            "  user_id: {column: uid}\n  item_id: {line_id: item_id}\n  emit: {after: 1m}\n",
            "label_join.user_id: unknown key \"column\"; allowed: line_id, feature, unit",
        ),
        (&format!("{base}  request_id: 7\n  emit: {{after: 1m}}\n"), "label_join.request_id: found 7, expected log,"),
        (
            &format!("{base}  refresh: {{line_id: req_id}}\n  emit: {{after: 1m}}\n"),
            "label_join.refresh.line_id: \"req_id\" is string",
        ),
    ] {
        let err = with(section).unwrap_err();
        assert!(err.contains(expected), "{expected}\nnot in\n{err}\nfor\n{section}");
    }
}

#[test]
fn refresh_without_the_event_rule_is_fine() {
    let plan = with(
        "  user_id: {line_id: uid}\n  item_id: {line_id: item_id}\n  refresh: {line_id: is_draw}\n  \
         emit: {requests_back: 0, after: 10m}\n",
    )
    .unwrap();
    assert!(matches!(&plan.label_join().unwrap().refresh, Some(KeySource::LineId { name, .. }) if name == "is_draw"));
}
