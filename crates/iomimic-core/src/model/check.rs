//! Loading checks: what the types cannot say about a model (probabilities, ranges, ids,
//! distributions), each refusal naming the field's path.

use super::{
    size_class, Arrivals, Bucket, Chain, Dist, Model, OpStats, Reuse, Runs, Sizes, State, Stats, Thread,
    FORMAT, GAP_CLASSES, HOT_SPOTS, MAX_RUN_ALIGNMENT, MAX_RUN_CELLS, PLACEMENT_CELLS, PROFILE_SEGMENTS,
    READS, SIZE_CLASSES,
};
use crate::error::{Error, Result};

/// Probabilities are accepted when they sum to 1 within this (files keep 7 significant digits).
const SUM_TOLERANCE: f64 = 1e-5;

pub(super) fn invalid(path: &str, what: impl std::fmt::Display) -> Error {
    Error::Usage(format!("model field {path}: {what}"))
}

fn check_probabilities(path: &str, p: &[f64]) -> Result<()> {
    if let Some(i) = p.iter().position(|x| !(0.0..=1.0).contains(x)) {
        return Err(invalid(
            &format!("{path}[{i}]"),
            format!("{} is not a probability", p[i]),
        ));
    }
    // (+ 0.0: an empty sum is -0.0, which would print as "-0")
    let sum: f64 = p.iter().sum::<f64>() + 0.0;
    if (sum - 1.0).abs() > SUM_TOLERANCE {
        return Err(invalid(path, format!("probabilities sum to {sum}, not 1")));
    }
    Ok(())
}

fn check_probability(path: &str, p: f64) -> Result<()> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(invalid(path, format!("{p} is not a probability")))
    }
}

impl Model {
    /// Checks what the types cannot: probabilities, ranges, ids and distributions.
    pub fn validate(&self) -> Result<()> {
        if self.format != FORMAT {
            return Err(invalid(
                "format",
                format!("expected {FORMAT:?}, found {:?}", self.format),
            ));
        }
        if !READS.contains(&self.version) {
            return Err(invalid(
                "version",
                format!(
                    "this iomimic reads versions {}, found {}",
                    READS.map(|v| v.to_string()).join(", "),
                    self.version
                ),
            ));
        }
        if self.threads.is_empty() {
            return Err(invalid("threads", "a model needs at least one thread"));
        }
        if self.volumes.is_empty() {
            return Err(invalid("volumes", "a model needs at least one volume"));
        }
        // each weight is named where it stands (`threads[2].weight`), their sum as a whole
        for (i, t) in self.threads.iter().enumerate() {
            check_probability(&format!("threads[{i}].weight"), t.weight)?;
        }
        check_probabilities(
            "threads[].weight",
            &self.threads.iter().map(|t| t.weight).collect::<Vec<_>>(),
        )?;
        if self.rate.window_ns == 0 {
            return Err(invalid("rate.window_ns", "must be positive"));
        }
        check_probabilities("rate.shares", &self.rate.shares)?;
        if let Some(a) = &self.rate.arrivals {
            check_arrivals("rate.arrivals", a)?;
        }
        for (i, t) in self.threads.iter().enumerate() {
            self.check_thread(&format!("threads[{i}]"), t)?;
        }
        Ok(())
    }

    fn check_thread(&self, path: &str, t: &Thread) -> Result<()> {
        if t.alignment == 0 {
            return Err(invalid(&format!("{path}.alignment"), "must be positive"));
        }
        check_stats(&format!("{path}.defaults"), &t.defaults)?;
        if t.defaults.interarrival.is_none() {
            return Err(invalid(
                &format!("{path}.defaults.interarrival"),
                "a thread's defaults need a gap distribution",
            ));
        }
        for (j, v) in t.volumes.iter().enumerate() {
            let vp = format!("{path}.volumes[{j}]");
            if v.volume as usize >= self.volumes.len() {
                return Err(invalid(
                    &format!("{vp}.volume"),
                    format!("no volume {}", v.volume),
                ));
            }
            check_stats(&format!("{vp}.stats"), &v.stats)?;
        }
        if let Some(a) = &t.activity {
            if a.len() != self.rate.shares.len() {
                return Err(invalid(
                    &format!("{path}.activity"),
                    format!(
                        "{} windows, but rate.shares has {}",
                        a.len(),
                        self.rate.shares.len()
                    ),
                ));
            }
            check_probabilities(&format!("{path}.activity"), a)?;
        }
        if !t.members.is_empty() {
            let shares: Vec<f64> = t.members.iter().map(|&(_, p)| p).collect();
            check_probabilities(&format!("{path}.members"), &shares)?;
        }
        self.check_chain(&format!("{path}.chain"), &t.chain, None)?;
        let profiles: Vec<&Vec<u32>> = t.chain.states.iter().filter_map(|s| s.profile.as_ref()).collect();
        let profiled: u64 = profiles
            .iter()
            .flat_map(|p| p.iter())
            .map(|&n| u64::from(n))
            .sum();
        // the walk steers towards these counts by the thread's trained requests (a rounded
        // count each: a mix scales them)
        let trained = (t.weight * self.requests as f64).round() as u64;
        if profiled > trained + (PROFILE_SEGMENTS * profiles.len()) as u64 {
            return Err(invalid(
                &format!("{path}.chain.states[].profile"),
                format!(
                    "count {profiled} requests, more than the thread's {trained} (its weight times \
                     the model's requests)"
                ),
            ));
        }
        if let Some(st) = &t.streams {
            for (name, p) in [
                ("continuation_depth", &st.continuation_depth),
                ("near_depth", &st.near_depth),
            ] {
                if !p.is_empty() {
                    check_probabilities(&format!("{path}.streams.{name}"), p)?;
                }
            }
            if !st.near_gap.bytes.is_empty() {
                check_probabilities(&format!("{path}.streams.near_gap.p"), &st.near_gap.p)?;
            }
        }
        if let Some(r) = &t.reuse {
            check_reuse(&format!("{path}.reuse"), r)?;
            // as generation counts the thread's trained requests
            let trained = (t.weight * self.requests as f64).round() as u64;
            check_population(
                &format!("{path}.reuse.population"),
                r,
                t.chain.states.len(),
                trained,
            )?;
        }
        Ok(())
    }

    fn check_chain(&self, path: &str, c: &Chain, parent: Option<&State>) -> Result<()> {
        let n = c.states.len();
        if n == 0 {
            return Err(invalid(
                &format!("{path}.states"),
                "a chain needs at least one state",
            ));
        }
        if c.initial.len() != n || c.transitions.len() != n {
            return Err(invalid(
                path,
                format!(
                    "{n} states but {} initial probabilities and {} transition rows",
                    c.initial.len(),
                    c.transitions.len()
                ),
            ));
        }
        check_probabilities(&format!("{path}.initial"), &c.initial)?;
        for (s, state) in c.states.iter().enumerate() {
            let sp = format!("{path}.states[{s}]");
            self.check_state(&sp, c, s, state, parent)?;
            let edges = &c.transitions[s];
            if !edges.is_empty() {
                check_probabilities(
                    &format!("{path}.transitions[{s}][].p"),
                    &edges.iter().map(|e| e.p).collect::<Vec<_>>(),
                )?;
            }
            let mut targets: Vec<u32> = edges.iter().map(|e| e.to).collect();
            targets.sort_unstable();
            if let Some(to) = targets.windows(2).find_map(|w| (w[0] == w[1]).then_some(w[0])) {
                return Err(invalid(
                    &format!("{path}.transitions[{s}]"),
                    format!("two edges to state {to}"),
                ));
            }
            for (e, edge) in edges.iter().enumerate() {
                let ep = format!("{path}.transitions[{s}][{e}]");
                if edge.to as usize >= n {
                    return Err(invalid(
                        &format!("{ep}.to"),
                        format!("no state {} ({n} states)", edge.to),
                    ));
                }
                if let Some(st) = &edge.stats {
                    check_stats(&format!("{ep}.stats"), st)?;
                }
            }
            if let Some(children) = &state.children {
                self.check_chain(&format!("{sp}.children"), children, Some(state))?;
            }
        }
        Ok(())
    }

    /// State `s` of chain `c`: its volume, its range (inside its parent's, after the state
    /// before it) and its fine placement counts.
    fn check_state(
        &self,
        sp: &str,
        c: &Chain,
        s: usize,
        state: &State,
        parent: Option<&State>,
    ) -> Result<()> {
        if state.volume == super::rows::UNRANGED {
            return Err(invalid(
                sp,
                "no range: only the children of a state, split equally, leave out volume, start and end",
            ));
        }
        let Some(volume) = self.volumes.get(state.volume as usize) else {
            return Err(invalid(
                &format!("{sp}.volume"),
                format!("no volume {}", state.volume),
            ));
        };
        if state.start >= state.end || state.end > volume.span_bytes.max(1) {
            return Err(invalid(
                sp,
                format!(
                    "range [{}, {}) is empty or past the volume span {}",
                    state.start, state.end, volume.span_bytes
                ),
            ));
        }
        if let Some(p) = parent {
            if state.volume != p.volume || state.start < p.start || state.end > p.end {
                return Err(invalid(sp, "a child state must lie inside its parent"));
            }
        }
        if s > 0 {
            let prev = &c.states[s - 1];
            if (prev.volume, prev.end) > (state.volume, state.start) {
                return Err(invalid(
                    sp,
                    "states must be sorted by volume and start and must not overlap",
                ));
            }
        }
        if let Some(fine) = &state.fine {
            if fine.is_empty() || fine.iter().all(|&c| c == 0) || fine.len() as u64 > state.end - state.start
            {
                return Err(invalid(
                    &format!("{sp}.fine"),
                    "needs at least one non-zero count and no more sub-ranges than bytes",
                ));
            }
        }
        if let Some(reused) = &state.fine_reused {
            let fine = state.fine.as_deref().unwrap_or(&[]);
            if reused.len() != fine.len() || reused.iter().zip(fine).any(|(r, f)| r > f) {
                return Err(invalid(
                    &format!("{sp}.fine_reused"),
                    "needs `fine`, as many counts, and none above its count there",
                ));
            }
        }
        if let Some(stays) = &state.stays {
            if parent.is_some() {
                return Err(invalid(
                    &format!("{sp}.stays"),
                    "only top-level states have stays",
                ));
            }
            check_buckets(&format!("{sp}.stays"), stays)?;
        }
        if let Some(runs) = &state.runs {
            if parent.is_some() {
                return Err(invalid(&format!("{sp}.runs"), "only top-level states have runs"));
            }
            let mut slots = Vec::new();
            for (j, r) in runs.iter().enumerate() {
                let rp = format!("{sp}.runs[{j}]");
                check_runs(&rp, r)?;
                let slot = r.own_slot();
                if slots.contains(&slot) {
                    return Err(invalid(&rp, "a class (op and size class) has its runs once"));
                }
                slots.push(slot);
            }
        }
        if let Some(profile) = &state.profile {
            if parent.is_some()
                || state.stays.is_none()
                || profile.len() != PROFILE_SEGMENTS
                || profile.iter().all(|&n| n == 0)
            {
                return Err(invalid(
                    &format!("{sp}.profile"),
                    format!(
                        "only a top-level state with stays has a profile: {PROFILE_SEGMENTS} counts, \
                         not all 0"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// One class's runs: its class in range, its sizes in that class, fresh runs to draw from
/// (cells of the state, lengths from 1), restarts with lengths, a sequence that refers to
/// those and a power-of-two alignment.
fn check_runs(rp: &str, r: &Runs) -> Result<()> {
    if r.op > 1 || usize::from(r.size_class) >= SIZE_CLASSES.len() {
        return Err(invalid(
            rp,
            format!(
                "op is 0 (reads) or 1 (the rest) and size_class below {}",
                SIZE_CLASSES.len()
            ),
        ));
    }
    check_sizes(&format!("{rp}.sizes"), &r.sizes)?;
    if let Some(j) = r
        .sizes
        .bytes
        .iter()
        .position(|&b| size_class(b) != usize::from(r.size_class))
    {
        return Err(invalid(
            &format!("{rp}.sizes.bytes[{j}]"),
            "a size outside the runs' size class",
        ));
    }
    if r.fresh.is_empty() || r.fresh.iter().all(|f| f[3] == 0) {
        return Err(invalid(
            &format!("{rp}.fresh"),
            "needs at least one run started afresh",
        ));
    }
    let cells = r.cells;
    if cells == 0 || cells > MAX_RUN_CELLS {
        return Err(invalid(
            &format!("{rp}.cells"),
            format!("needs 1 to {MAX_RUN_CELLS} cells"),
        ));
    }
    if let Some(j) = r
        .fresh
        .iter()
        .position(|&[cell, from, to, _]| cell >= cells || from == 0 || to <= from)
    {
        return Err(invalid(
            &format!("{rp}.fresh[{j}]"),
            format!("needs [cell, from, to, count] with cell below cells ({cells}) and 1 <= from < to"),
        ));
    }
    check_probability(&format!("{rp}.restart"), r.restart)?;
    if r.restart > 0.0 {
        check_buckets(&format!("{rp}.restarts"), &r.restarts)?;
    }
    if !r.alignment.is_power_of_two() || r.alignment > MAX_RUN_ALIGNMENT {
        return Err(invalid(
            &format!("{rp}.alignment"),
            format!("needs a power of two, at most {MAX_RUN_ALIGNMENT}"),
        ));
    }
    let mut fresh = 0;
    for (j, &[start, length]) in r.sequence.iter().enumerate() {
        let known = start < cells || start - cells < fresh;
        if length == 0 || !known {
            return Err(invalid(
                &format!("{rp}.sequence[{j}]"),
                format!(
                    "needs [start, length]: a length of at least 1, and a start below {cells} (a \
                     cell) or {cells} + k for one of the {fresh} fresh runs before it"
                ),
            ));
        }
        fresh += u64::from(start < cells);
    }
    Ok(())
}

fn check_sizes(path: &str, sizes: &Sizes) -> Result<()> {
    if sizes.bytes.is_empty() || sizes.bytes.len() != sizes.p.len() {
        return Err(invalid(
            path,
            "needs as many probabilities as sizes, at least one",
        ));
    }
    check_probabilities(&format!("{path}.p"), &sizes.p)?;
    if let Some(j) = sizes.bytes.iter().position(|&b| b == 0) {
        // a read or write of no bytes is no request (the readers refuse one too)
        return Err(invalid(
            &format!("{path}.bytes[{j}]"),
            "a size must be at least 1 byte",
        ));
    }
    Ok(())
}

/// The placement probabilities of `s` (or of one of its ops) are probabilities, together at
/// most 1.
fn check_placement(path: &str, sequential: f64, reuse: f64, continuation: f64, near: f64) -> Result<()> {
    for (name, p) in [
        ("sequential", sequential),
        ("reuse", reuse),
        ("continuation", continuation),
        ("near", near),
    ] {
        check_probability(&format!("{path}.{name}"), p)?;
    }
    if sequential + reuse + continuation + near > 1.0 + SUM_TOLERANCE {
        return Err(invalid(
            path,
            "sequential + continuation + near + reuse exceeds 1",
        ));
    }
    Ok(())
}

fn check_stats(path: &str, s: &Stats) -> Result<()> {
    check_probabilities(&format!("{path}.ops"), &s.ops)?;
    check_placement(path, s.sequential, s.reuse, s.continuation, s.near)?;
    check_sizes(&format!("{path}.sizes"), &s.sizes)?;
    if !s.by_op.is_empty() && !(2..=3).contains(&s.by_op.len()) {
        return Err(invalid(
            &format!("{path}.by_op"),
            format!(
                "holds reads and writes, and trims if kept apart (2 or 3 entries), found {}",
                s.by_op.len()
            ),
        ));
    }
    for (k, o) in s.by_op.iter().enumerate() {
        let OpStats {
            sequential,
            reuse,
            continuation,
            near,
            sizes,
        } = o;
        let op_path = format!("{path}.by_op[{k}]");
        check_placement(&op_path, *sequential, *reuse, *continuation, *near)?;
        check_sizes(&format!("{op_path}.sizes"), sizes)?;
    }
    match &s.interarrival {
        Some(d) => check_dist(&format!("{path}.interarrival"), d),
        None => Ok(()),
    }
}

fn check_dist(path: &str, d: &Dist) -> Result<()> {
    let bad = |what: &str| Err(invalid(path, what.to_string()));
    let ok = |x: f64| x.is_finite() && x >= 0.0;
    match d {
        Dist::Fixed { value_ns } if !ok(*value_ns) => bad("value_ns must be >= 0"),
        Dist::Normal { mean_ns, sd_ns } if !ok(*mean_ns) || !ok(*sd_ns) => {
            bad("mean_ns and sd_ns must be >= 0")
        }
        Dist::Exponential { mean_ns } if !(ok(*mean_ns) && *mean_ns > 0.0) => bad("mean_ns must be > 0"),
        Dist::Poisson { lambda_ns } if !(ok(*lambda_ns) && *lambda_ns > 0.0) => bad("lambda_ns must be > 0"),
        Dist::Gamma { shape, scale_ns }
            if !(ok(*shape) && *shape > 0.0 && ok(*scale_ns) && *scale_ns > 0.0) =>
        {
            bad("shape and scale_ns must be > 0")
        }
        Dist::Lognormal { mu, sigma } if !(mu.is_finite() && ok(*sigma)) => {
            bad("mu must be finite and sigma >= 0")
        }
        Dist::Empirical { quantiles_ns }
            if quantiles_ns.is_empty()
                || quantiles_ns.windows(2).any(|w| w[1] < w[0])
                || !quantiles_ns.iter().all(|&q| ok(q)) =>
        {
            bad("quantiles_ns must be non-empty, non-negative and non-decreasing")
        }
        _ => Ok(()),
    }
}

fn check_buckets(path: &str, buckets: &[Bucket]) -> Result<()> {
    if buckets.is_empty() {
        return Err(invalid(path, "needs at least one bucket"));
    }
    check_probabilities(
        &format!("{path}[].p"),
        &buckets.iter().map(|b| b.p).collect::<Vec<_>>(),
    )?;
    if let Some(j) = buckets.iter().position(|b| b.from == 0 || b.to <= b.from) {
        return Err(invalid(&format!("{path}[{j}]"), "needs 1 <= from < to"));
    }
    Ok(())
}

fn check_reuse(path: &str, r: &Reuse) -> Result<()> {
    check_buckets(&format!("{path}.buckets"), &r.buckets)?;
    for op in 0..2u8 {
        let shares: Vec<f64> = r.classes.iter().filter(|c| c.op == op).map(|c| c.p).collect();
        if !shares.is_empty() {
            check_probabilities(&format!("{path}.classes[op={op}].p"), &shares)?;
        }
    }
    for (j, c) in r.classes.iter().enumerate() {
        let cp = format!("{path}.classes[{j}]");
        if c.op > 1 || c.last_op > 1 {
            return Err(invalid(&cp, "op and last_op are 0 (read) or 1 (write)"));
        }
        if !(0.0..=1.0).contains(&c.rank_share) {
            return Err(invalid(&format!("{cp}.rank_share"), "must be in [0, 1]"));
        }
        if c.rank_share < 1.0 {
            check_buckets(&format!("{cp}.buckets"), &c.buckets)?;
        }
        if c.rank_share > 0.0 {
            check_buckets(&format!("{cp}.ranks"), &c.ranks)?;
        }
    }
    if let Some(f) = r.tail_fresh {
        if !(f.is_finite() && f >= 0.0) {
            return Err(invalid(&format!("{path}.tail_fresh"), "must be a number >= 0"));
        }
    }
    Ok(())
}

/// A population has at most a state's worth of entries per top-level state, touch counts
/// rising from 1, and not many more placements than the thread's requests: generation holds
/// 4 bytes for each (a mix rescales a thread's requests, so only a wide bound is checked).
fn check_population(path: &str, r: &Reuse, states: usize, trained: u64) -> Result<()> {
    if r.population.len() > states {
        return Err(invalid(
            path,
            format!("has {} entries for {states} top-level states", r.population.len()),
        ));
    }
    let mut tokens = 0u64;
    for (s, p) in r.population.iter().enumerate() {
        let mut last = 0;
        for (j, &[touches, requests]) in p.touches.iter().enumerate() {
            if touches <= last || requests == 0 {
                return Err(invalid(
                    &format!("{path}[{s}].touches[{j}]"),
                    "must be [touches, requests] with touches rising from 1 and requests >= 1",
                ));
            }
            last = touches;
            tokens = tokens.saturating_add(touches.saturating_mul(requests));
        }
        tokens = tokens.saturating_add(p.other);
        let reused: u64 = p.touches.iter().filter(|r| r[0] >= 2).map(|r| r[1]).sum();
        let placed: u64 = p.touches.iter().map(|r| r[1]).sum();
        let counted: u64 = p.cells.iter().flatten().map(|&c| u64::from(c)).sum();
        if !p.cells.is_empty() && (p.cells.len() != PLACEMENT_CELLS || counted == 0 || counted > placed) {
            return Err(invalid(
                &format!("{path}[{s}].cells"),
                format!(
                    "needs {PLACEMENT_CELLS} cells of [not re-used, re-used] counts, some not zero and \
                     together at most the state's {placed} requests placed afresh ({} cells, {counted} counted)",
                    p.cells.len()
                ),
            ));
        }
        if p.hot.len() as u64 > reused.min(HOT_SPOTS as u64) {
            return Err(invalid(
                &format!("{path}[{s}].hot"),
                format!(
                    "places {} requests, more than the state's {reused} re-used (or {HOT_SPOTS})",
                    p.hot.len()
                ),
            ));
        }
    }
    let most = trained.max(1 << 20).saturating_mul(16);
    if tokens > most {
        return Err(invalid(
            path,
            format!(
                "holds {tokens} placements, more than {most} (16 times the thread's {trained} \
                 requests, or 16 Mi)"
            ),
        ));
    }
    Ok(())
}

fn check_arrivals(path: &str, a: &Arrivals) -> Result<()> {
    if a.window_ns == 0 || a.block == 0 {
        return Err(invalid(path, "window_ns and block must be positive"));
    }
    if a.counts.iter().all(|&c| c == 0) {
        return Err(invalid(&format!("{path}.counts"), "needs at least one request"));
    }
    if a.period_blocks == Some(0) {
        return Err(invalid(&format!("{path}.period_blocks"), "must be positive"));
    }
    if a.classes.is_empty() || a.classes.windows(2).any(|w| w[1].min_count <= w[0].min_count) {
        return Err(invalid(
            &format!("{path}.classes"),
            "needs at least one class, sorted by min_count without repeats",
        ));
    }
    for (j, c) in a.classes.iter().enumerate() {
        let cp = format!("{path}.classes[{j}]");
        if c.spread.is_empty()
            || c.spread.windows(2).any(|w| w[1] < w[0])
            || c.spread.iter().any(|&x| !(0.0..=1.0).contains(&x))
        {
            return Err(invalid(
                &format!("{cp}.spread"),
                "quantiles must be non-empty, non-decreasing and within [0, 1]",
            ));
        }
        if c.empty.windows(2).any(|w| w[1] < w[0]) || c.empty.iter().any(|&x| !(x >= 0.0 && x.is_finite())) {
            return Err(invalid(
                &format!("{cp}.empty"),
                "quantiles must be non-decreasing, finite and at least 0",
            ));
        }
        if let Some(t) = c
            .transitions
            .iter()
            .find(|t| t[0] > GAP_CLASSES || t[1] >= GAP_CLASSES || t[2] == 0)
        {
            return Err(invalid(
                &format!("{cp}.transitions"),
                format!("{t:?}: from is at most {GAP_CLASSES}, to below it, and a count is positive"),
            ));
        }
    }
    Ok(())
}
