use std::time::Instant;
fn vmhwm() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .unwrap()
        .to_string()
}
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let mode = std::env::args().nth(2).unwrap_or("rolled".into());
    let t = Instant::now();
    let f = adjit_ir::trace::trace(n, |x| {
        let mut s = x[0] * 0.0;
        for i in 0..n - 1 {
            let a = x[i + 1] - x[i] * x[i];
            let b = 1.0 - x[i];
            s = s + a * a * 100.0 + b * b;
        }
        s
    });
    let t_trace = t.elapsed().as_secs_f64();
    if mode == "rolled" {
        let t = Instant::now();
        let r = adjit_ir::Rolled::from_function(&f);
        let t_roll = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let d = if std::env::var("VJP").is_ok() {
            adjit_diff::vjp_rolled(&r)
        } else {
            adjit_diff::jvp_rolled(&r)
        };
        let t_jvp = t.elapsed().as_secs_f64();
        println!("n={n} trace {t_trace:.3} roll {t_roll:.3} jvp_rolled {t_jvp:.3} held {} of {} loops {} {}", d.n_template_insts(), d.n_values(), d.loops().len(), vmhwm());
    } else {
        let t = Instant::now();
        let d = if std::env::var("VJP").is_ok() {
            adjit_diff::vjp(&f)
        } else {
            adjit_diff::jvp(&f)
        };
        let t_jvp = t.elapsed().as_secs_f64();
        println!(
            "n={n} trace {t_trace:.3} jvp {t_jvp:.3} values {} {}",
            d.n_values(),
            vmhwm()
        );
    }
}
