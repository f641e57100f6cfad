# tmux-mcp shell integration for fish (`tmux-mcp shell-init fish | source`).
# Tells the broker of this tmux server what this shell runs: a line per
# command, appended to a file in the broker's private directory with builtins
# only (no fork, no tmux command, so no tmux hook fires). Inert outside tmux
# and while no broker runs (its directory is then absent).
if status is-interactive; and set -q TMUX_PANE; and not set -q __tmcp_f
    set -g __tmcp_d @DIR@
    set -g __tmcp_f $__tmcp_d/$TMUX_PANE
    set -g __tmcp_p (string replace -r '/[^/]*$' '' -- $__tmcp_d)
    # The marks directory and the runtime directory holding it are this
    # user's own, no symlink: one removed and made again by another user (a
    # /tmp cleaner ran) is never written to, nor a request read from it.
    function __tmcp_ours
        test -d $__tmcp_d -a -O $__tmcp_d -a ! -L $__tmcp_d -a -O $__tmcp_p -a ! -L $__tmcp_p
    end
    function __tmcp_esc
        set -l s (string replace -a -- \\ \\\\ $argv[1])
        set s (string replace -a -- \t \\t $s)
        set s (string replace -a -- \r \\r $s)
        string join -- \\n $s
    end
    # __tmcp_put KIND STATUS TEXT
    function __tmcp_put
        __tmcp_ours; or return 0
        # Escaping only what needs it keeps a prompt's cost down.
        set -l s $PWD
        set -l c $argv[3]
        string match -qr '[\\\\\t\r\n]' -- $s; and set s (__tmcp_esc $s)
        string match -qr '[\\\\\t\r\n]' -- $c; and set c (__tmcp_esc $c)
        printf '%s\tfish\t%s\t\t%s\t%s\t%s\n' $argv[1] $fish_pid "$argv[2]" "$s" "$c" >>$__tmcp_f 2>/dev/null
    end
    function __tmcp_preexec --on-event fish_preexec
        # An agent's line is named without the space that keeps it out of
        # history.
        if test -n "$__tmcp_job"
            __tmcp_put C '' (string sub -s 2 -- $argv[1] | string collect)
        else
            __tmcp_put C '' $argv[1]
        end
    end
    function __tmcp_postexec --on-event fish_postexec
        set -l s $status
        # fish keeps a line that starts with a space for Up until the next
        # line: an agent's line does not stay even there.
        test -n "$__tmcp_job"; and builtin history delete --exact --case-sensitive -- $argv[1] >/dev/null 2>&1
        __tmcp_put P $s "$__tmcp_job"
        set -g __tmcp_job
        set -g __tmcp_posted 1
    end
    # run_command through this shell: the broker writes the command to
    # $__tmcp_f.run and sends private key chords; the line editor takes the
    # command as if typed (\e[9400~; a leading space keeps it out of
    # history), and gives the person's half-typed line back after (\e[9402~).
    function __tmcp_take
        test -f $__tmcp_f.run -a -O $__tmcp_f.run -a ! -L $__tmcp_f.run; and __tmcp_ours; or return 0
        read -z -l all <$__tmcp_f.run
        set -l parts (string split -m1 \n -- $all)
        test -n "$parts[1]"; or return 0
        # Refused (an R mark saying why, the editor untouched) while the
        # pager (completions) or a history search is open.
        set -l why
        if commandline --paging-mode
            set why pager
        else if commandline --search-mode
            set why search
        else if not contains -- $fish_bind_mode default insert
            set why mode
        end
        if test -n "$why"
            __tmcp_put R '' (string replace ' script' '' -- $parts[1])" 0 refused:$why"
            return 0
        end
        if string match -q '* script' -- $parts[1]
            # tmux_run: an authored script, only into an idle, empty editor;
            # it runs under /bin/sh with its output in the broker's files.
            set -l id (string replace ' script' '' -- $parts[1])
            set -l now (commandline | string collect)
            if test -n "$now"
                __tmcp_put R '' "$id "(string length -- "$now")" busy"
                return 0
            end
            set -l f (string split \n -- $parts[2])
            __tmcp_put R '' "$id 0 script"
            command /bin/sh $f[1] </dev/null >$f[2] 2>$f[3]
            __tmcp_put X $status $id
            return 0
        end
        set -l line (commandline | string collect)
        if test -n "$line"
            set -g -a __tmcp_kept $line
            set -g -a __tmcp_kept_at (commandline -C)
            __tmcp_put K '' (count $__tmcp_kept)
        end
        set -g __tmcp_job $parts[1]
        __tmcp_put R '' "$parts[1] "(string length -- "$line")" 1"
        commandline -r -- " $parts[2]"
        # No autosuggestion drawn after the command (it would look like part
        # of it: `cd /` shown as `cd /bin/`).
        commandline -f suppress-autosuggestion execute
    end
    # The lines set aside, a stack (text and cursor), as zsh's buffer
    # stack: the broker sends \e[9402~ after the run and, while a line is
    # held, after each later prompt (the K mark says how many are held).
    # Keys the person typed during the run wait in the terminal before the
    # chord, so they are in the editor when it comes: the line is given back
    # only into an empty editor, else held for the next prompt (never joined
    # to theirs, never dropped).
    set -g __tmcp_kept
    set -g __tmcp_kept_at
    function __tmcp_give
        set -l now (commandline | string collect)
        if test -z "$now"; and set -q __tmcp_kept[1]
            commandline -r -- $__tmcp_kept[-1]
            commandline -C $__tmcp_kept_at[-1]
            set -e __tmcp_kept[-1]
            set -e __tmcp_kept_at[-1]
        end
        __tmcp_put K '' (count $__tmcp_kept)
    end
    # An empty line runs no command, so no P mark says the prompt came
    # back: while a line is held, this prompt says it (the broker gives the
    # line back at the next prompt).
    function __tmcp_prompt --on-event fish_prompt
        set -l s $status
        if set -q __tmcp_kept[1]; and not set -q __tmcp_posted
            __tmcp_put P $s ''
        end
        set -e __tmcp_posted
    end
    # Every vi mode too: an unbound chord would be read as keys there
    # (visual mode's `~` flips a character's case); the binding refuses
    # outside the default and insert modes.
    for m in default insert visual replace_one replace
        bind -M $m \e\[9400\~ __tmcp_take
        bind -M $m \e\[9402\~ __tmcp_give
    end
    # A broker started after this shell asks whether it is enrolled with
    # SIGURG (which a shell without this snippet ignores): the answer is the
    # I mark.
    function __tmcp_asked --on-signal URG
        __tmcp_put I '' $FISH_VERSION
    end
    __tmcp_put I '' $FISH_VERSION
end
