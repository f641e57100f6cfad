# tmux-mcp shell integration for zsh (`eval "$(tmux-mcp shell-init zsh)"`).
# Tells the broker of this tmux server what this shell runs: a line per prompt
# and per command, appended to a file in the broker's private directory with
# builtins only (no fork at a prompt, no tmux command, so no tmux hook fires).
# Inert outside tmux and while no broker runs (its directory is then absent).
if [[ -o interactive && -n ${TMUX_PANE-} && -z ${__tmcp_f-} ]]; then
typeset -g __tmcp_d=@DIR@
typeset -g __tmcp_f=$__tmcp_d/$TMUX_PANE
zmodload -F zsh/datetime p:EPOCHREALTIME 2>/dev/null
__tmcp_put() { # KIND STATUS CWD TEXT
    emulate -L zsh
    [[ -d $__tmcp_d ]] || return 0
    local s=${3//\\/\\\\} c=${4//\\/\\\\}
    s=${s//$'\t'/\\t} c=${c//$'\t'/\\t}
    s=${s//$'\n'/\\n} c=${c//$'\n'/\\n}
    s=${s//$'\r'/\\r} c=${c//$'\r'/\\r}
    { printf '%s\tzsh\t%s\t%s\t%s\t%s\t%s\n' $1 $$ "${EPOCHREALTIME-}" "$2" "$s" "$c" >>$__tmcp_f } 2>/dev/null
}
__tmcp_precmd() {
    local s=$?
    __tmcp_put P $s $PWD ''
    return $s
}
__tmcp_preexec() { __tmcp_put C '' $PWD "${1:-$3}"; }
precmd_functions=(__tmcp_precmd $precmd_functions)
preexec_functions+=(__tmcp_preexec)
__tmcp_put I '' $PWD $ZSH_VERSION
fi
