use std::collections::BTreeMap;

use proptest::prelude::*;

use super::apps::System;
use super::curve::HitCurve;
use super::*;

const GB: f64 = 1024.0 * 1024.0 * 1024.0;

fn example() -> Report {
    run(&serde_json::from_value(serde_json::json!({})).unwrap()).unwrap()
}

fn scheme<'r>(r: &'r Report, scenario: &str, name: &str) -> &'r SchemeReport {
    let s = r.scenarios.iter().find(|s| s.name == scenario).unwrap();
    s.schemes.iter().find(|x| x.scheme == name).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn the_worked_example_number_for_number() {
    let r = example();
    for (scenario, ta, ws1, ws2) in [
        ("Browsing", 0.53875, 0.9325, 0.37),
        ("Shopping", 0.71875, 0.8875, 0.55),
        ("Ordering", 0.80875, 0.8425, 0.73),
    ] {
        let by_ws = scheme(&r, scenario, "working-set");
        assert!(close(by_ws.overall, 0.82), "{scenario}: {}", by_ws.overall);
        assert!(close(by_ws.allocation[0], 1.6 * GB) && close(by_ws.allocation[1], 0.4 * GB));
        let t = scheme(&r, scenario, "transaction-aware");
        assert!(close(t.overall, ta), "{scenario}: {} not {ta}", t.overall);
        assert!(
            close(t.vm_latency[0], ws1) && close(t.vm_latency[1], ws2),
            "{scenario}: {:?}",
            t.vm_latency
        );
        assert!(t.fitness[0].unwrap() < 1e-12);
    }
    let b = scheme(&r, "Browsing", "transaction-aware");
    assert!(close(b.allocation[0], 0.6 * GB) && close(b.allocation[1], 1.4 * GB));
    assert!(close(b.hit[0], 0.075) && close(b.hit[1], 0.7));
}

#[test]
fn optimal_fills_the_small_working_set_first_and_shows_the_gap() {
    // per GB, WS2 saves 0.9·w2/2 against WS1's 0.9·w1/8: WS2 wins whenever w2 > w1/4
    let r = example();
    for (scenario, best) in [
        ("Browsing", 0.3 + 0.7 * 0.1),
        ("Shopping", 0.5 + 0.05),
        ("Ordering", 0.7 + 0.03),
    ] {
        let o = scheme(&r, scenario, "optimal");
        assert!(close(o.overall, best), "{scenario}: {}", o.overall);
        assert!(close(o.allocation[1], 2.0 * GB));
        let s = r.scenarios.iter().find(|s| s.name == scenario).unwrap();
        for other in &s.schemes {
            assert!(o.overall <= other.overall + 1e-12);
        }
        assert!(s.ga_shortfall.unwrap() > 0.1);
    }
}

#[test]
fn equal_split_by_hand() {
    // 1 GB each: WS1 hits 1/8, WS2 1/2; Browsing 0.3·0.8875 + 0.7·0.55
    let r = example();
    let e = scheme(&r, "Browsing", "equal");
    assert!(close(e.overall, 0.3 * 0.8875 + 0.7 * 0.55));
}

fn run_text(text: &str) -> Result<Report> {
    run(&serde_json::from_value(serde_json::json!({"apps": text, "apps_file": "apps.toml"})).unwrap())
}

#[test]
fn errors_name_the_file_and_field() {
    let bad_vm = EXAMPLE.replace(
        "time = { WS1 = 0.3, WS2 = 0.7 }",
        "time = { WS1 = 0.3, WS3 = 0.7 }",
    );
    let e = run_text(&bad_vm).unwrap_err().to_string();
    assert!(
        e.contains("apps.toml: field `apps[0].transactions[0].time.WS3`"),
        "{e}"
    );
    let bad_size = EXAMPLE.replace("working_set = \"8G\"", "working_set = \"8 parsecs\"");
    let e = run_text(&bad_size).unwrap_err().to_string();
    assert!(e.contains("apps.toml") && e.contains("vms[0].working_set"), "{e}");
    let unknown = EXAMPLE.replace("cache = \"2G\"", "cache = \"2G\"\nspeed = 3");
    let e = run_text(&unknown).unwrap_err().to_string();
    assert!(e.contains("hypervisors[0]") && e.contains("speed"), "{e}");
    let e = run_text(&EXAMPLE.replace("working_set = \"2G\"", "trace = \"ws2.csv\""))
        .unwrap_err()
        .to_string();
    assert!(e.contains("vms[1].trace") && e.contains("not measured"), "{e}");
}

#[test]
fn a_measured_cliff_is_planned_by_dynamic_programme() {
    let text = EXAMPLE.replace("working_set = \"2G\"", "trace = \"ws2.csv\"");
    let mut curves = BTreeMap::new();
    // no hits until 1.5 GB, then all: greedy by first piece would never reach the cliff
    let points = vec![(1.5 * GB, 1.0), (1.5 * GB + 1.0, 0.0)];
    curves.insert(
        "WS2".to_string(),
        apps::MeasuredCurve {
            footprint_bytes: 1.5 * GB,
            mean_request_bytes: 4096.0,
            points,
        },
    );
    let sys = System::parse(&text, "apps.toml", &curves).unwrap();
    let load = Load::scenario(&sys, 0);
    let p = plan::plan(&sys, &load, Scheme::Optimal, &GaOptions::default(), 1);
    assert!(p.methods[0].starts_with("dynamic"));
    assert!(p.bytes[1] >= 1.5 * GB);
}

fn concave(points: &[(f64, f64)]) -> HitCurve {
    // cumulative pieces with falling slopes: a concave hit curve through (x, 1 − miss)
    let mut out = Vec::new();
    let (mut x, mut hit) = (0.0, 0.0);
    let mut slopes: Vec<(f64, f64)> = points.to_vec();
    slopes.sort_by(|a, b| (b.1 / b.0).total_cmp(&(a.1 / a.0)));
    for (len, share) in slopes {
        x += len;
        hit = (hit + share).min(1.0);
        out.push((x, 1.0 - hit));
    }
    HitCurve::from_miss_ratios(&out).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn greedy_is_optimal_on_concave_curves(
        specs in prop::collection::vec(
            (prop::collection::vec((1.0f64..50.0, 0.01f64..0.4), 1..4), 0.0f64..5.0), 2..5),
        cache in 1.0f64..120.0,
    ) {
        // pieces whole numbers of a grain long, so the grid holds the optimum
        let curves: Vec<HitCurve> = specs.iter()
            .map(|(p, _)| concave(&p.iter().map(|&(l, s)| (l.round().max(1.0), s)).collect::<Vec<_>>()))
            .collect();
        let refs: Vec<&HitCurve> = curves.iter().collect();
        let c: Vec<f64> = specs.iter().map(|s| s.1).collect();
        let cache = cache.round();
        let saved = |a: &[f64]| a.iter().enumerate().map(|(k, &b)| c[k] * curves[k].hit(b)).sum::<f64>();
        let g = plan::greedy(&refs, &c, cache);
        let d = plan::dynamic(&refs, &c, cache, cache as u32);
        prop_assert!((saved(&g) - saved(&d)).abs() < 1e-9, "greedy {} dp {}", saved(&g), saved(&d));
        prop_assert!(g.iter().sum::<f64>() <= cache + 1e-9);
        // and no equal or proportional split beats it
        let n = curves.len() as f64;
        prop_assert!(saved(&g) + 1e-9 >= saved(&vec![cache / n; curves.len()]));
        let total: f64 = c.iter().sum::<f64>().max(1e-9);
        prop_assert!(saved(&g) + 1e-9 >= saved(&c.iter().map(|w| cache * w / total).collect::<Vec<_>>()));
    }
}

const TWO_APPS: &str = r#"
[[hypervisors]]
name = "h"
cache = "4G"

[[vms]]
name = "web"
working_set = "8G"
[[vms]]
name = "db"
working_set = "2G"
[[vms]]
name = "img"
working_set = "4G"

[[apps]]
name = "shop"
vms = ["web", "db"]
rate = 10
transactions = [
  { name = "view", time = { web = 0.8, db = 0.2 } },
  { name = "buy", time = { web = 0.1, db = 0.9 } },
]
workloads = [
  { name = "Browsing", mix = { view = 0.9, buy = 0.1 } },
  { name = "Ordering", mix = { view = 0.2, buy = 0.8 } },
]

[[apps]]
name = "gallery"
vms = ["img"]
rate = 10
transactions = [{ name = "show", time = { img = 1.0 } }]
workloads = [{ name = "Browsing", mix = { show = 1 } }]
"#;

#[test]
fn the_loop_follows_a_workload_change() {
    let timeline = r#"
window_s = 10
duration_s = 200
[[changes]]
at_s = 100
app = "shop"
workload = "Ordering"
[[changes]]
at_s = 150
app = "gallery"
rate = 40
"#;
    let opts = serde_json::json!({"apps": TWO_APPS, "timeline": timeline, "seed": 3, "schemes": ["optimal"]});
    let r = run(&serde_json::from_value(opts.clone()).unwrap()).unwrap();
    let a = r.adapt.unwrap();
    assert_eq!(a.windows.len(), 20);
    // detected at the end of the first changed window, in effect from the next
    assert_eq!(a.windows[10].detected[0], "Ordering");
    assert!(a.windows[10].replanned && a.windows[15].replanned);
    assert!(a.windows[11].adaptive < a.windows[11].r#static - 1e-6);
    assert!(a.windows[16].allocation[2] > a.windows[14].allocation[2]);
    for w in &a.windows {
        assert!(w.optimal <= w.adaptive + 1e-9 && w.optimal <= w.equal + 1e-9);
    }
    assert!(a.mean[0] < a.mean[1]);
    // seeded: the same run twice
    let again = run(&serde_json::from_value(opts).unwrap())
        .unwrap()
        .adapt
        .unwrap();
    assert_eq!(
        again.windows.iter().map(|w| w.adaptive).collect::<Vec<_>>(),
        a.windows.iter().map(|w| w.adaptive).collect::<Vec<_>>()
    );
}

#[test]
fn timeline_errors_name_the_field() {
    let opts = serde_json::json!({"apps": TWO_APPS, "timeline": "window_s = 10\nduration_s = 50\n[[changes]]\nat_s = 5\napp = \"shop\"\nworkload = \"Paying\"\n", "timeline_file": "mix.toml"});
    let e = run(&serde_json::from_value(opts).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("mix.toml: field `changes[0].workload`"), "{e}");
}
