# tmux-mcp shell integration for bash (`eval "$(tmux-mcp shell-init bash)"`).
# Tells the broker of this tmux server what this shell runs: a line per prompt
# and per command, appended to a file in the broker's private directory with
# builtins only (no fork at a prompt, no tmux command, so no tmux hook fires).
# Inert outside tmux and while no broker runs (its directory is then absent).
if [[ $- == *i* && -n ${TMUX_PANE-} && -z ${__tmcp_f-} ]]; then
__tmcp_d=@DIR@
__tmcp_f=$__tmcp_d/$TMUX_PANE
__tmcp_p=${__tmcp_d%/*}
# The marks directory and the runtime directory holding it are this user's
# own, no symlink: one removed and made again by another user (a /tmp
# cleaner ran) is never written to, nor a request read from it.
__tmcp_ours() {
    [[ -d $__tmcp_d && -O $__tmcp_d && ! -L $__tmcp_d && -O $__tmcp_p && ! -L $__tmcp_p ]]
}
__tmcp_at=
# Which prompt the line editor reads at: a continuation prompt (PS2: a
# here-document, an open quote, a `do` without `done`) sets __tmcp_c to 1
# as it is drawn, through an empty expansion appended to PS2 (no fork); each
# primary prompt's precmd sets it to 0 and puts the expansion back if PS2
# was set anew. Unset until the first prompt, so nothing is taken before.
__tmcp_c=
__tmcp_ps2='${__tmcp_v[__tmcp_c=1]-}'
# A line the person entered, told from a trap run at the prompt (a signal's:
# the DEBUG trap fires before its commands too, BASH_COMMAND still naming
# the last line): PS0 is drawn only after a line is read, and sets
# __tmcp_line to 1 the same way; put back at each prompt like PS2's.
__tmcp_line=
__tmcp_ps0='${__tmcp_v[__tmcp_line=1]-}'
# __tmcp_put KIND STATUS CWD TEXT
__tmcp_put() {
    __tmcp_ours || return 0
    local s=${3//\\/\\\\} c=${4//\\/\\\\}
    s=${s//$'\t'/\\t} c=${c//$'\t'/\\t}
    s=${s//$'\n'/\\n} c=${c//$'\n'/\\n}
    s=${s//$'\r'/\\r} c=${c//$'\r'/\\r}
    { printf '%s\tbash\t%s\t%s\t%s\t%s\t%s\n' "$1" "$$" "${EPOCHREALTIME-}" "$2" "$s" "$c" >>"$__tmcp_f"; } 2>/dev/null
}
__tmcp_precmd() {
    local s=$?
    # Put back in place for the next prompt; this prompt runs the old
    # PROMPT_COMMAND to its end, so its __tmcp_arm may not be last: not armed.
    [[ -n ${__tmcp_bp-} ]] || __tmcp_wrap || __tmcp_noarm=1
    __tmcp_at=
    __tmcp_c=0
    __tmcp_line=
    [[ $PS2 == *"$__tmcp_ps2"* ]] || ! shopt -q promptvars || PS2+=$__tmcp_ps2
    [[ ${PS0-} == *"$__tmcp_ps0"* ]] || ! shopt -q promptvars || PS0+=$__tmcp_ps0
    # An agent's line (run_command) leaves no history entry; bash keeps each
    # line of a multi-line one as its own.
    if [[ -n ${__tmcp_job-} && -n ${__tmcp_h-} ]]; then
        while ((HISTCMD > __tmcp_h)) && builtin history -d $((HISTCMD - 1)); do :; done
    fi
    __tmcp_put P "$s" "$PWD" "${__tmcp_job-}"
    __tmcp_job=
    # The number the next line gets if history keeps it.
    __tmcp_h=$HISTCMD
    return $s
}
__tmcp_arm() {
    if [[ -n ${__tmcp_noarm-} ]]; then __tmcp_noarm=; else __tmcp_at=1; fi
}
# The person's rc, a prompt framework or a tool (direnv, a virtualenv) may
# set PROMPT_COMMAND after this snippet: __tmcp_precmd must run first (it
# reads $?) and __tmcp_arm last (what runs after it is taken for the
# person's line). Both are put back in place, ours elsewhere turned into
# __tmcp_keep, which keeps $?. Checked at each prompt and, when
# PROMPT_COMMAND lost __tmcp_precmd, before each command.
__tmcp_keep() { return; }
__tmcp_wrap() {
    # Options set here end with the function (a person's `set -u` would
    # refuse ${PROMPT_COMMAND@a} of a plain variable).
    local -
    set +u
    local p n=${#PROMPT_COMMAND[@]}
    if [[ ${PROMPT_COMMAND@a} == *a* ]]; then
        [[ $n -ge 2 && ${PROMPT_COMMAND[0]} == __tmcp_precmd && ${PROMPT_COMMAND[n-1]} == __tmcp_arm ]] && return 0
        local a=("${PROMPT_COMMAND[@]//__tmcp_precmd/__tmcp_keep}")
        PROMPT_COMMAND=(__tmcp_precmd "${a[@]//__tmcp_arm/__tmcp_keep}" __tmcp_arm)
        return 1
    else
        [[ $PROMPT_COMMAND == __tmcp_precmd$'\n'* && $PROMPT_COMMAND == *$'\n'__tmcp_arm ]] && return 0
        p=${PROMPT_COMMAND-}
        p=${p//__tmcp_precmd/__tmcp_keep}
        PROMPT_COMMAND=__tmcp_precmd$'\n'${p//__tmcp_arm/__tmcp_keep}$'\n'__tmcp_arm
        return 1
    fi
}
# Whether a line was read since the prompt (PS0 drawn); true where PS0 is
# not ours to tell (promptvars off, or PS0 set anew since the prompt).
__tmcp_read() {
    [[ -n $__tmcp_line || ${PS0-} != *"$__tmcp_ps0"* ]]
}
# The first DEBUG trap after the prompt is the line the person entered (an
# empty line runs PROMPT_COMMAND at once); a line history did not keep
# (ignorespace, ignoredups) is named by its first command. The fork of
# `history 1` is per command, never per prompt.
__tmcp_debug() {
    [[ ${PROMPT_COMMAND[*]-} == *__tmcp_precmd* ]] || __tmcp_wrap
    [[ -n $__tmcp_at && -z ${COMP_LINE-} ]] || return 0
    # A key binding's command (bind -x, ours or fzf's) is not a line, nor
    # are our signal traps run at the prompt.
    [[ -n ${READLINE_LINE+x} ]] && return 0
    __tmcp_read || return 0
    __tmcp_at=
    [[ $BASH_COMMAND == __tmcp_precmd ]] && return 0
    local c=$BASH_COMMAND
    # An agent's line is named by all of it (bash's history has its lines
    # apart, BASH_COMMAND its first command).
    if [[ -n ${__tmcp_job-} ]]; then
        c=$__tmcp_cmd
    elif [[ $HISTCMD == "${__tmcp_h-}" ]]; then
        c=$(LC_ALL=C HISTTIMEFORMAT= builtin history 1)
        [[ $c =~ ^\ *[0-9]+[\*\ ]\ (.*)$ ]] && c=${BASH_REMATCH[1]}
    fi
    __tmcp_put C "" "$PWD" "$c"
}
if [[ -n ${bash_preexec_imported-}${__bp_imported-} ]]; then
    __tmcp_bp=1
    __tmcp_preexec() {
        __tmcp_read || return 0
        if [[ -n ${__tmcp_job-} ]]; then __tmcp_put C "" "$PWD" "$__tmcp_cmd"; else __tmcp_put C "" "$PWD" "$1"; fi
    }
    precmd_functions=(__tmcp_precmd "${precmd_functions[@]}")
    preexec_functions+=(__tmcp_preexec)
else
    __tmcp_wrap || :
    # A DEBUG trap of the person's own is kept: commands are then not
    # reported as they start, only as they end.
    [[ -z $(trap -p DEBUG) ]] && trap '__tmcp_debug "$_"' DEBUG
fi
# run_command through this shell: the broker writes the command to
# $__tmcp_f.run and sends a private key chord (\e[9400~), a macro of two
# keys read before anything the person types: the line editor takes the
# command as if typed (\e[9403~, __tmcp_take), then presses \e[9401~,
# which __tmcp_take binds to accept-line once it took a command and to
# nothing otherwise (a bind -x function cannot accept the line itself, and
# a second chord from the broker would let keys typed in between join the
# command). The person's half-typed line comes back after (\e[9402~).
__tmcp_accept() {
    local m
    for m in emacs vi-insert vi-command; do
        bind -m $m "\"\\e[9401~\": $1"
    done
}
# Refused (an R mark saying why, the editor untouched) unless the editor
# reads at the primary prompt, as proven by __tmcp_c; a line with `#` when
# interactive_comments is off (the broker's parse check reads comments).
__tmcp_take() {
    local id cmd why=
    __tmcp_accept '""'
    [[ -f $__tmcp_f.run && -O $__tmcp_f.run && ! -L $__tmcp_f.run ]] && __tmcp_ours || return 0
    { IFS= read -r id; IFS= read -r -d '' cmd; } <"$__tmcp_f.run"
    [[ -n $id ]] || return 0
    if [[ $__tmcp_c != 0 ]]; then
        why=continuation
    elif [[ $PS2 != *"$__tmcp_ps2"* ]] || ! shopt -q promptvars; then
        why=prompt-unknown
    elif [[ $id != *' script' && $cmd == *'#'* ]] && ! shopt -q interactive_comments; then
        why=comments
    fi
    if [[ -n $why ]]; then
        __tmcp_put R "" "$PWD" "${id% script} 0 refused:$why"
        return 0
    fi
    if [[ $id == *' script' ]]; then
        # tmux_run: an authored script, only into an idle, empty editor; it
        # runs under /bin/sh with its output in the broker's files.
        id=${id% script}
        if [[ -n $READLINE_LINE ]]; then
            __tmcp_put R "" "$PWD" "$id ${#READLINE_LINE} busy"
            return 0
        fi
        local f
        mapfile -t f <<<"$cmd"
        __tmcp_put R "" "$PWD" "$id 0 script"
        command /bin/sh "${f[0]}" </dev/null >"${f[1]}" 2>"${f[2]}"
        __tmcp_put X "$?" "$PWD" "$id"
        return 0
    fi
    local kept=${#READLINE_LINE}
    if ((kept)); then
        __tmcp_kept+=("$READLINE_LINE") __tmcp_kept_at+=("$READLINE_POINT")
        __tmcp_put K "" "$PWD" "${#__tmcp_kept[@]}"
    fi
    __tmcp_job=$id __tmcp_cmd=$cmd
    READLINE_LINE=$cmd READLINE_POINT=${#cmd}
    __tmcp_accept accept-line
    __tmcp_put R "" "$PWD" "$id $kept 1"
}
# The lines set aside, a stack (text and cursor), as zsh's buffer stack:
# the broker sends \e[9402~ after the run and, while a line is held, after
# each later prompt (the K mark says how many are held). Keys the person
# typed during the run wait in the terminal before the chord, so they are in
# the editor when it comes: the line is given back only into an empty line
# at the primary prompt, else held for the next prompt (never joined to
# theirs, never dropped).
__tmcp_kept=() __tmcp_kept_at=()
__tmcp_give() {
    local n=${#__tmcp_kept[@]}
    if ((n)) && [[ -z $READLINE_LINE && $__tmcp_c == 0 ]]; then
        READLINE_LINE=${__tmcp_kept[n-1]} READLINE_POINT=${__tmcp_kept_at[n-1]}
        unset '__tmcp_kept[n-1]' '__tmcp_kept_at[n-1]'
    fi
    __tmcp_put K "" "$PWD" "${#__tmcp_kept[@]}"
}
for __tmcp_m in emacs vi-insert vi-command; do
    bind -m $__tmcp_m -x '"\e[9403~": __tmcp_take'
    bind -m $__tmcp_m '"\e[9400~": "\e[9403~\e[9401~"'
    bind -m $__tmcp_m '"\e[9401~": ""'
    bind -m $__tmcp_m -x '"\e[9402~": __tmcp_give'
done
unset __tmcp_m
# A broker started after this shell asks whether it is enrolled with SIGURG
# (which a shell without this snippet ignores): the answer is the I mark.
# Left to the person's rc when it traps URG itself. readline runs a pending
# trap only when a signal it handles wakes it and bash traps that one too:
# the broker sends SIGWINCH after SIGURG, and a WINCH trap (`:`, unless the
# person has one) makes it run.
# (The DEBUG trap fires before a trap's commands: no PS0, so no line.)
[[ -n $(trap -p URG) ]] || trap '__tmcp_put I "" "$PWD" "$BASH_VERSION"' URG
[[ -n $(trap -p WINCH) ]] || trap : WINCH
__tmcp_put I "" "$PWD" "$BASH_VERSION"
fi
