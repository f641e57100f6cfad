# tmux-mcp shell integration for zsh (`eval "$(tmux-mcp shell-init zsh)"`).
# Tells the broker of this tmux server what this shell runs: a line per prompt
# and per command, appended to a file in the broker's private directory with
# builtins only (no fork at a prompt, no tmux command, so no tmux hook fires).
# Inert outside tmux and while no broker runs (its directory is then absent).
if [[ -o interactive && -n ${TMUX_PANE-} && -z ${__tmcp_f-} ]]; then
typeset -g __tmcp_d=@DIR@
typeset -g __tmcp_f=$__tmcp_d/$TMUX_PANE
typeset -g __tmcp_p=${__tmcp_d%/*}
# The marks directory and the runtime directory holding it are this user's
# own, no symlink: one removed and made again by another user (a /tmp
# cleaner ran) is never written to, nor a request read from it.
__tmcp_ours() {
    [[ -d $__tmcp_d && -O $__tmcp_d && ! -L $__tmcp_d && -O $__tmcp_p && ! -L $__tmcp_p ]]
}
zmodload -F zsh/datetime p:EPOCHREALTIME 2>/dev/null
# __tmcp_put KIND STATUS CWD TEXT
__tmcp_put() {
    emulate -L zsh
    __tmcp_ours || return 0
    local s=${3//\\/\\\\} c=${4//\\/\\\\}
    s=${s//$'\t'/\\t} c=${c//$'\t'/\\t}
    s=${s//$'\n'/\\n} c=${c//$'\n'/\\n}
    s=${s//$'\r'/\\r} c=${c//$'\r'/\\r}
    { printf '%s\tzsh\t%s\t%s\t%s\t%s\t%s\n' $1 $$ "${EPOCHREALTIME-}" "$2" "$s" "$c" >>$__tmcp_f } 2>/dev/null
}
__tmcp_precmd() {
    local s=$?
    __tmcp_pop
    (( $#__tmcp_kept )) && __tmcp_hook
    __tmcp_put P $s $PWD "${__tmcp_job-}"
    typeset -g __tmcp_job=
    return $s
}
# An agent's line (run_command) leaves no history entry, not even the one
# zsh keeps for Up until the next line (a line a hook refuses lingers): it
# goes into a history list of its own (fc -p), dropped at the next prompt
# (fc -P), so while it runs `history` shows only it. Not dropped in preexec:
# zsh hands preexec hooks the entry's own text, which fc -P frees.
__tmcp_addhist() {
    [[ -z ${__tmcp_job-} ]] && return 0
    fc -p && typeset -g __tmcp_pushed=1
    return 1
}
__tmcp_pop() {
    [[ -n ${__tmcp_pushed-} ]] || return 0
    typeset -g __tmcp_pushed=
    fc -P
}
# run_command through this shell: the broker writes the command to
# $__tmcp_f.run and sends a private key chord (\e[9400~); the line editor
# takes the command as if typed, the person's half-typed line set aside on a
# stack of ours (text and cursor) and given back by a zle-line-init hook at
# the first later prompt whose editor is empty with no key pending. Not
# push-line: zsh pops its buffer stack at the next prompt whatever the
# person typed during the run, and their keys, waiting in the terminal,
# were appended to it (one line of two).
# Refused (an R mark saying why, the editor untouched) unless ZLE reads at
# the primary prompt ($CONTEXT start, nothing read before: not a
# here-document's or an open quote's continuation); a line holding a comment
# when interactive_comments is off (the person's zsh would run `# …` as
# words, the broker's parse check reads it as a comment).
__tmcp_take() {
    local ctx=$CONTEXT ic=$options[interactivecomments]
    emulate -L zsh
    local id cmd why=
    [[ -f $__tmcp_f.run && -O $__tmcp_f.run && ! -L $__tmcp_f.run ]] && __tmcp_ours || return 0
    { IFS= read -r id; IFS= read -r -d '' cmd } <$__tmcp_f.run
    [[ -n $id ]] || return 0
    if [[ $ctx != start || -n $PREBUFFER ]]; then
        why=continuation
    elif (( REGION_ACTIVE )); then
        why=mode
    elif [[ $id != *' script' && $ic != on ]]; then
        local -a words=(${(Z+c+)cmd}) code=(${(Z+C+)cmd})
        (( $#words == $#code )) || why=comments
    fi
    if [[ -n $why ]]; then
        __tmcp_put R '' $PWD "${id% script} 0 refused:$why"
        return 0
    fi
    if [[ $id == *' script' ]]; then
        # tmux_run: an authored script, only into an idle, empty editor; it
        # runs under /bin/sh with its output in the broker's files.
        id=${id% script}
        if [[ -n $BUFFER ]]; then
            __tmcp_put R '' $PWD "$id ${#BUFFER} busy"
            return 0
        fi
        local -a f=("${(@f)cmd}")
        __tmcp_put R '' $PWD "$id 0 script"
        command /bin/sh $f[1] </dev/null >$f[2] 2>$f[3]
        __tmcp_put X $? $PWD $id
        return 0
    fi
    local kept=${#BUFFER}
    if (( kept )); then
        __tmcp_kept+=("$BUFFER") __tmcp_kept_at+=($CURSOR)
        __tmcp_hook
    fi
    typeset -g __tmcp_job=$id __tmcp_cmd=$cmd
    __tmcp_put R '' $PWD "$id $kept 1"
    BUFFER=$cmd
    zle accept-line
}
zle -N __tmcp_take
typeset -ga __tmcp_kept __tmcp_kept_at
# Gives the last line set aside back into an empty editor at the primary
# prompt, only when no key waits ($PENDING: the terminal's queue, which
# holds what the person typed during the run; KEYS_QUEUED_COUNT: keys a
# widget pushed back): those keys are the person's line, and the set-aside
# one waits for a later prompt.
__tmcp_give() {
    emulate -L zsh
    (( $#__tmcp_kept )) || return 0
    [[ -z $BUFFER && -z $PREBUFFER && $CONTEXT == start ]] || return 0
    (( PENDING == 0 && ${KEYS_QUEUED_COUNT:-0} == 0 )) || return 0
    BUFFER=$__tmcp_kept[-1]
    CURSOR=$__tmcp_kept_at[-1]
    shift -p __tmcp_kept __tmcp_kept_at
}
zle -N __tmcp_give
autoload -Uz add-zle-hook-widget
# Added beside the person's own zle-line-init (add-zle-hook-widget keeps
# theirs); put back while a line is held if their rc replaced the widget
# after this snippet.
__tmcp_hook() {
    emulate -L zsh
    [[ ${widgets[zle-line-init]-} == user:azhw:zle-line-init ]] && return
    add-zle-hook-widget line-init __tmcp_give
}
bindkey -M emacs '\e[9400~' __tmcp_take
bindkey -M viins '\e[9400~' __tmcp_take
bindkey -M vicmd '\e[9400~' __tmcp_take
bindkey -M visual '\e[9400~' __tmcp_take 2>/dev/null
zshaddhistory_functions+=(__tmcp_addhist)
# An agent's line is named as the agent wrote it.
__tmcp_preexec() {
    if [[ -n ${__tmcp_job-} ]]; then
        __tmcp_put C '' $PWD "$__tmcp_cmd"
    else
        __tmcp_put C '' $PWD "${1:-$3}"
    fi
}
precmd_functions=(__tmcp_precmd $precmd_functions)
preexec_functions+=(__tmcp_preexec)
# A broker started after this shell asks whether it is enrolled with SIGURG
# (which a shell without this snippet ignores): the answer is the I mark.
# Left to the person's rc when it traps URG itself. 0: handled.
if (( ! ${+functions[TRAPURG]} )); then
    TRAPURG() {
        __tmcp_put I '' $PWD $ZSH_VERSION
        return 0
    }
fi
__tmcp_put I '' $PWD $ZSH_VERSION
fi
