/* embed.h - the init's global names when it is compiled into a host program.
 *
 * A program that carries the init itself (A3S_SANDBOX_SELF_INIT; the Go
 * package does this) compiles every init source with this header included
 * first, and embed.c. The init's external functions then take an a3s_init_
 * prefix, so that they cannot collide with the host program's own C code
 * (a "die" or "serve" of its own), and its main becomes a3s_init_main, which
 * embed.c calls. Every function of native/init that is not static must be
 * listed here (tests/test_init_embed.py checks it).
 */
#ifndef A3S_INIT_EMBED_H
#define A3S_INIT_EMBED_H

#define main a3s_init_main
#define die a3s_init_die
#define signal_namespace a3s_init_signal_namespace
#define set_cloexec a3s_init_set_cloexec
#define has_capabilities a3s_init_has_capabilities
#define resolve_program a3s_init_resolve_program
#define run_child a3s_init_run_child
#define status_of a3s_init_status_of
#define arm_timer a3s_init_arm_timer
#define own_settings_open a3s_init_own_settings_open
#define oom_adj_for_command a3s_init_oom_adj_for_command
#define own_settings_restore a3s_init_own_settings_restore
#define command_nproc a3s_init_command_nproc
#define watchdog_arm a3s_init_watchdog_arm
#define watchdog_over a3s_init_watchdog_over
#define watchdog_socket a3s_init_watchdog_socket
#define probe_denials a3s_init_probe_denials
#define serve a3s_init_serve
#define grant_open a3s_init_grant_open
#define grant_close a3s_init_grant_close
#define janitor_main a3s_init_janitor_main
#define warden_main a3s_init_warden_main
#define fd_number a3s_init_fd_number
#define names_start a3s_init_names_start
#define links_take a3s_init_links_take
#define exectrace_add_rule a3s_init_exectrace_add_rule
#define exectrace_active a3s_init_exectrace_active
#define exectrace_reset a3s_init_exectrace_reset
#define exectrace_locate a3s_init_exectrace_locate
#define exectrace_tell_to a3s_init_exectrace_tell_to
#define exectrace_await a3s_init_exectrace_await
#define exectrace_seize a3s_init_exectrace_seize
#define exectrace_wait a3s_init_exectrace_wait
#define exectrace_report a3s_init_exectrace_report
#define exectrace_take a3s_init_exectrace_take
#define exectrace_answer a3s_init_exectrace_answer
#define exectrace_nodump a3s_init_exectrace_nodump
#define read_report a3s_init_read_report

#endif
