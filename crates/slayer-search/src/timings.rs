//! Where a search process spends its time, by stage, for `SLAYER_TIMINGS=1` (one `timings`
//! record on stderr when the process ends): the breakdown the dense channel's benchmark reports.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Time per stage, summed over a process's searches, in the order stages first ran. A clone
/// is a handle to the same laps (the context's and its dense channel's).
#[derive(Debug, Default, Clone)]
pub struct Timings {
    laps: Rc<RefCell<Vec<(&'static str, Duration)>>>,
}

impl Timings {
    /// Adds `spent` to `stage`.
    pub fn add(&self, stage: &'static str, spent: Duration) {
        let mut laps = self.laps.borrow_mut();
        match laps.iter_mut().find(|(s, _)| *s == stage) {
            Some((_, total)) => *total += spent,
            None => laps.push((stage, spent)),
        }
    }

    /// Runs `f`, counting its time to `stage`.
    pub fn time<T>(&self, stage: &'static str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.add(stage, start.elapsed());
        out
    }

    /// The stages and their milliseconds, as one JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        let mut stages = serde_json::Map::new();
        for (stage, spent) in self.laps.borrow().iter() {
            let ms = (spent.as_secs_f64() * 1e6).round() / 1e3;
            stages.insert((*stage).to_owned(), ms.into());
        }
        stages.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_sum_in_first_run_order() {
        let t = Timings::default();
        t.add("b", Duration::from_micros(1500));
        t.add("a", Duration::from_millis(2));
        t.add("b", Duration::from_micros(500));
        assert_eq!(t.time("c", || 7), 7);
        let json = t.to_json();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["b", "a", "c"]);
        assert_eq!(json["b"], 2.0);
        assert_eq!(json["a"], 2.0);
    }
}
