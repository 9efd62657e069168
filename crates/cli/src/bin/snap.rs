//! `snap`: the name people type.

fn main() -> std::process::ExitCode {
    snap_undo::main()
}
