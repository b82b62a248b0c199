# fish completion for infervisorctl

# Worker names, asked of the running daemon (nothing when it is not running).
function __infervisorctl_workers
    infervisorctl --no-pager --no-legend status 2>/dev/null | string replace -r '^(\S+?)\*?\s.*' '$1'
end

set -l commands status show start stop restart checkpoint suspend resume kill reload remove-workdir checkpoints events history simulate logs config top drain undrain
set -l takes_worker status show start stop restart checkpoint suspend resume kill history logs remove-workdir checkpoints events

complete -c infervisorctl -f
complete -c infervisorctl -l socket -r -F -d "The daemon's control socket"
complete -c infervisorctl -s H -l host -x -a '(__fish_print_hostnames)' -d 'The daemon on [USER@]HOST[:PORT], through ssh'
complete -c infervisorctl -l json -d 'Print JSON'
complete -c infervisorctl -l no-pager -d 'Do not pipe long output into a pager'
complete -c infervisorctl -l no-legend -d 'Print tables without their header line'
complete -c infervisorctl -s h -l help -d 'Show help'
complete -c infervisorctl -l version -d 'Show the version'

complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a status -d "Show the workers' state and measurements"
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a show -d 'Show one worker in detail'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a start -d 'Start workers'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a stop -d 'Stop workers'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a restart -d 'Stop, then start workers'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a checkpoint -d 'Ask workers for a checkpoint'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a suspend -d 'Suspend workers'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a resume -d 'Resume suspended workers'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a kill -d 'Send a signal to every process of a worker'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a reload -d 'Reread the configuration and apply it'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a drain -d 'Maintenance: stop admitting starts, bring every worker down gently'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a undrain -d 'End a drain: start again the workers that were up'
complete -c infervisorctl -n '__fish_seen_subcommand_from drain' -l timeout -x -d 'Wait at most this long for the workers to be down'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a remove-workdir -d 'Delete the work dir of a removed worker'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a checkpoints -d "List or delete a worker's checkpoints"
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a events -d 'Show lifecycle and policy events'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a history -d "Draw a worker's recent memory, pressure, swap and actions"
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a logs -d "Show a worker's output from the journal"
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a config -d 'Work with configuration files'
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a top -d 'Watch the workers'

complete -c infervisorctl -n "__fish_seen_subcommand_from $takes_worker" -a '(__infervisorctl_workers)'
complete -c infervisorctl -n '__fish_seen_subcommand_from start stop restart checkpoint suspend resume' -l timeout -x -d 'Wait at most this long for the answer'
complete -c infervisorctl -n '__fish_seen_subcommand_from kill' -s s -l signal -x -a 'TERM KILL HUP INT QUIT USR1 USR2 STOP CONT' -d 'The signal'
complete -c infervisorctl -n '__fish_seen_subcommand_from events logs' -s f -l follow -d 'Keep printing new entries'
complete -c infervisorctl -n '__fish_seen_subcommand_from events logs' -s n -l lines -x -d 'How many entries'
complete -c infervisorctl -n '__fish_seen_subcommand_from events' -s S -l since -x -d 'Only events at or after this time'
complete -c infervisorctl -n '__fish_seen_subcommand_from events logs' -s D -l directory -x -a '(__fish_complete_directories)' -d 'Read journal files from a directory'
complete -c infervisorctl -n '__fish_seen_subcommand_from events' -l hostname -x -d "With -D: only this host's events"
complete -c infervisorctl -n '__fish_seen_subcommand_from top' -s i -l iterations -x -d 'Stop after N redraws'
complete -c infervisorctl -n '__fish_seen_subcommand_from status top' -s o -l output -x -a wide -d 'Every column'
complete -c infervisorctl -n '__fish_seen_subcommand_from status' -l timeout -x -d 'Wait at most this long for the answer (per host with several -H)'
complete -c infervisorctl -n '__fish_seen_subcommand_from reload' -l dry-run -d 'Say what would change; apply nothing'
complete -c infervisorctl -n '__fish_seen_subcommand_from reload' -l simulate -d 'With --dry-run: what its rules would have done over the last hour'
complete -c infervisorctl -n '__fish_seen_subcommand_from remove-workdir' -s y -l yes -d 'Delete without asking'
complete -c infervisorctl -n '__fish_seen_subcommand_from remove-workdir' -l dry-run -d 'Say which dir would be deleted'
complete -c infervisorctl -n '__fish_seen_subcommand_from checkpoints' -l delete -x -d 'Delete the checkpoint with this ID'
complete -c infervisorctl -n '__fish_seen_subcommand_from checkpoints' -l all -d "Delete all of the worker's checkpoints"
complete -c infervisorctl -n '__fish_seen_subcommand_from checkpoints' -s y -l yes -d 'Delete without asking'
complete -c infervisorctl -n '__fish_seen_subcommand_from history' -l csv -d 'One CSV row per sample'
complete -c infervisorctl -n '__fish_seen_subcommand_from history' -s n -l samples -x -d 'Newest samples to show'
complete -c infervisorctl -n '__fish_seen_subcommand_from history' -l width -x -d 'Columns'
complete -c infervisorctl -n '__fish_seen_subcommand_from history' -l height -x -d 'Rows of the memory chart'
complete -c infervisorctl -n '__fish_seen_subcommand_from history' -l export -r -F -d "Write the daemon's recording to a file"
complete -c infervisorctl -n "not __fish_seen_subcommand_from $commands" -a simulate -d "Replay what the daemon recorded through a configuration's rules"
complete -c infervisorctl -n '__fish_seen_subcommand_from simulate' -l config -r -F -d 'The configuration to try'
complete -c infervisorctl -n '__fish_seen_subcommand_from simulate' -l from -r -F -d 'An exported recording'
complete -c infervisorctl -n '__fish_seen_subcommand_from simulate' -l since -x -d 'Replay from then on'
complete -c infervisorctl -n '__fish_seen_subcommand_from simulate' -l worker -x -a '(__infervisorctl_workers)' -d 'Show only this worker'
complete -c infervisorctl -n '__fish_seen_subcommand_from simulate' -l json -d 'The replay as JSON'
complete -c infervisorctl -n '__fish_seen_subcommand_from config; and not __fish_seen_subcommand_from check' -a check -d 'Check a configuration file'
complete -c infervisorctl -n '__fish_seen_subcommand_from check' -F
complete -c infervisorctl -n '__fish_seen_subcommand_from check' -l workers-dir -x -a '(__fish_complete_directories)' -d 'The drop-ins to check with it'
