# tmux-mcp shell integration for fish (`tmux-mcp shell-init fish | source`).
# Tells the broker of this tmux server what this shell runs: a line per
# command, appended to a file in the broker's private directory with builtins
# only (no fork, no tmux command, so no tmux hook fires). Inert outside tmux
# and while no broker runs (its directory is then absent).
if status is-interactive; and set -q TMUX_PANE; and not set -q __tmcp_f
    set -g __tmcp_d @DIR@
    set -g __tmcp_f $__tmcp_d/$TMUX_PANE
    function __tmcp_esc
        set -l s (string replace -a -- \\ \\\\ $argv[1])
        set s (string replace -a -- \t \\t $s)
        set s (string replace -a -- \r \\r $s)
        string join -- \\n $s
    end
    function __tmcp_put # KIND STATUS TEXT
        test -d $__tmcp_d; or return 0
        set -l s (__tmcp_esc $PWD)
        set -l c (__tmcp_esc $argv[3])
        printf '%s\tfish\t%s\t\t%s\t%s\t%s\n' $argv[1] $fish_pid "$argv[2]" "$s" "$c" >>$__tmcp_f 2>/dev/null
    end
    function __tmcp_preexec --on-event fish_preexec
        __tmcp_put C '' $argv[1]
    end
    function __tmcp_postexec --on-event fish_postexec
        set -l s $status
        __tmcp_put P $s ''
    end
    __tmcp_put I '' $FISH_VERSION
end
