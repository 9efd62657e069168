//! `snap-undo`: the same program under a name no other tool has (Ubuntu's snapd installs
//! `/usr/bin/snap`, which has `snap save` and `snap restore` of its own).

fn main() -> std::process::ExitCode {
    snap_undo::main()
}
