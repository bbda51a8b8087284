//! A study added from outside the crate: this file and one registry line.

use iomimic_core::progress::Progress;
use iomimic_core::study::{self, Study};
use iomimic_core::{Error, Trace, TraceView};

/// Counts requests larger than a threshold.
struct BigRequests;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    over_bytes: u32,
}

#[derive(serde::Serialize)]
struct Report {
    requests: usize,
    big: usize,
}

impl Study for BigRequests {
    fn name(&self) -> &'static str {
        "big-requests"
    }

    fn description(&self) -> &'static str {
        "requests larger than a size"
    }

    fn run(
        &self,
        workload: &TraceView<'_>,
        options: &serde_json::Value,
        _progress: &Progress,
    ) -> Result<serde_json::Value, Error> {
        study::typed(self.name(), options, |o: Options| {
            Ok(Report {
                requests: workload.len(),
                big: workload.size.iter().filter(|&&s| s > o.over_bytes).count(),
            })
        })
    }
}

#[test]
fn a_toy_study_needs_one_registry_line() {
    let registry: Vec<&dyn Study> = [study::STUDIES, &[&BigRequests as &dyn Study]].concat();
    let t = Trace {
        ts_ns: vec![0, 1, 2],
        offset: vec![0, 0, 0],
        size: vec![512, 8192, 65536],
        op: vec![0, 0, 1],
        volume: vec![0; 3],
        stream: vec![0; 3],
        volumes: vec!["v".into()],
        ..Trace::default()
    };
    let s = study::find("big-requests", &registry).unwrap();
    let report = s
        .run(
            &t.view(),
            &serde_json::json!({ "over_bytes": 4096 }),
            &Progress::default(),
        )
        .unwrap();
    assert_eq!(report, serde_json::json!({ "requests": 3, "big": 2 }));
    let e = s
        .run(&t.view(), &serde_json::json!({ "over": 1 }), &Progress::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("study big-requests: option") && e.contains("over"),
        "{e}"
    );
    assert!(study::find("nope", &registry).is_err());
}
