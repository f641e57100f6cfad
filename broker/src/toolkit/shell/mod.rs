//! Shells and `run_command`: which programs are shells ([`shells`]), an
//! empty line proven ([`shell_line`]), a pane's enrolled shell ([`enrolled`])
//! and a run through it ([`shell_run`]), the line typed into any other shell
//! ([`typed_line`]) and its job ([`typed_job`]), and a job as the tools report
//! it ([`job`]).

pub mod enrolled;
pub mod job;
pub mod shell_line;
pub mod shell_run;
pub mod shells;
pub mod typed_job;
pub mod typed_line;
