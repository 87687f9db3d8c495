//! The measured server's own resource use, read from `/proc/PID` when `--server-pid` is given
//! (Linux): CPU seconds over the run and peak resident memory. On a shared machine the CPU
//! time tells how much of its core the server actually got, so throughput per server CPU-second
//! can be compared between noisy runs.

use std::path::PathBuf;

use serde::Serialize;

/// One reading of a process's counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcReading {
    /// User + system CPU time, seconds.
    pub cpu_secs: f64,
    /// Resident set size, bytes.
    pub rss_bytes: u64,
}

/// The server's use over a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ServerUsage {
    /// The (first) server process.
    pub pid: u32,
    /// How many server processes were measured (`--server-pid` list): CPU and memory are sums.
    pub processes: u32,
    pub cpu_secs: f64,
    /// `cpu_secs` over the run's wall time: 1.0 is one core fully used.
    pub cores_used: f64,
    /// Highest resident memory seen at the once-a-second samples.
    pub peak_rss_bytes: u64,
}

/// Reads `/proc/PID/stat` (CPU) and `/proc/PID/statm` (memory).
pub fn read(pid: u32) -> std::io::Result<ProcReading> {
    let base = PathBuf::from(format!("/proc/{pid}"));
    let stat = std::fs::read_to_string(base.join("stat"))?;
    let statm = std::fs::read_to_string(base.join("statm"))?;
    parse(&stat, &statm).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("unexpected /proc/{pid}/stat format"),
        )
    })
}

/// One thread of a process: its name (`comm`, at most 15 bytes) and CPU time so far.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadReading {
    pub tid: u32,
    pub name: String,
    pub cpu_secs: f64,
}

/// Every thread of `pid` now (`/proc/PID/task/*/stat`); a thread that ends while it is read is
/// left out.
pub fn threads(pid: u32) -> std::io::Result<Vec<ThreadReading>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let entry = entry?;
        let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some((name, cpu_secs)) = parse_thread(&stat) {
            out.push(ThreadReading {
                tid,
                name,
                cpu_secs,
            });
        }
    }
    Ok(out)
}

/// A thread's name and CPU seconds from its `stat` line.
fn parse_thread(stat: &str) -> Option<(String, f64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_owned();
    let fields: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((name, (utime + stime) as f64 / 100.0))
}

/// The group a thread's name belongs to: the name without a trailing number (`metafi-world-3`
/// → `metafi-world`, `metafi-match-0` → `metafi-match`), so a pool's threads count together and
/// the groups are the same from run to run.
pub fn thread_group(name: &str) -> &str {
    let trimmed = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if trimmed.len() == name.len() {
        return name;
    }
    let trimmed = trimmed.trim_end_matches(['-', '_', ' ', '#']);
    if trimmed.is_empty() { name } else { trimmed }
}

/// CPU from `stat` fields 14–15 (after the parenthesised command name), in clock ticks of
/// 1/100 s (the value of `getconf CLK_TCK` on Linux); RSS from `statm` field 2, in 4 KiB pages.
fn parse(stat: &str, statm: &str) -> Option<ProcReading> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // after the name: state is field 3, so utime (14) and stime (15) are at 11 and 12 here
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(ProcReading {
        cpu_secs: (utime + stime) as f64 / 100.0,
        rss_bytes: pages * 4096,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_and_statm_parse() {
        let stat = "4242 (metafi serve) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 4 0 100 500000000 3000 18446744073709551615";
        let statm = "125000 3000 900 200 0 5000 0";
        let reading = parse(stat, statm).expect("parses");
        assert!((reading.cpu_secs - 18.01).abs() < 1e-9);
        assert_eq!(reading.rss_bytes, 3000 * 4096);
        assert_eq!(parse("garbage", statm), None);
    }

    #[test]
    fn thread_stat_lines_parse_and_names_group_without_their_number() {
        let stat = "4243 (metafi-world-1) R 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 4 0 100 500000000 3000 18446744073709551615";
        assert_eq!(parse_thread(stat), Some(("metafi-world-1".into(), 3.0)));
        assert_eq!(parse_thread("no parens"), None);
        assert_eq!(thread_group("metafi-world-1"), "metafi-world");
        assert_eq!(thread_group("metafi-world"), "metafi-world");
        assert_eq!(thread_group("metafi-match-12"), "metafi-match");
        assert_eq!(thread_group("metafi-io"), "metafi-io");
        assert_eq!(thread_group("metafi-sqlite-r"), "metafi-sqlite-r");
        assert_eq!(thread_group("1234"), "1234");
    }

    #[test]
    fn our_own_threads_can_be_read() {
        let threads = threads(std::process::id()).expect("own /proc task entries");
        assert!(!threads.is_empty());
        assert!(threads.iter().all(|t| t.tid > 0 && t.cpu_secs >= 0.0));
    }

    #[test]
    fn our_own_process_can_be_read() {
        let reading = read(std::process::id()).expect("own /proc entry");
        assert!(reading.rss_bytes > 0);
    }
}
