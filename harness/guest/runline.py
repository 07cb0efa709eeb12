"""What a run line would execute, as far as its text shows it.

A run line is one line of shell for busybox sh. check-workloads resolves
what it names as the guest will (guest/check.py). Each command of the line
gives:

- its program (role PROGRAM): the first word, or, through a wrapper that
  runs a program after its own options and operands (timeout -s KILL 60
  PROG, env A=1 PROG, nice -n 5 PROG, taskset -c 0 PROG, ionice, stdbuf,
  chrt, setsid, nohup, time, xargs, exec, command, watch, unshare,
  linux32, setarch, the harness's phase, busybox APPLET), the word that
  wrapper runs; wrappers nest;
- a script a shell reads as its program (role SCRIPT): sh FILE, . FILE;
  the string of sh -c is a run line of its own and read the same way;
- its other words that are paths (role ARGUMENT): whether one is a program
  that the command runs (a wrapper of the user's: wis {tmp} /path/prog) is
  the checker's rule, not the text's.

What only the running shell knows is left to the boot (a command not found
there ends the step with exit 127): words built from variables or command
output, the inside of eval, what chroot, nsenter, su, start-stop-daemon
and run-parts run (another root's, another namespace's, a folder's).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

PROGRAM, SCRIPT, ARGUMENT = "program", "script", "argument"

# Words that end one command and begin another; after ')' the words go on
# being arguments of the command around it ('echo $(date) later').
SEPARATORS = {";", "&", "&&", "||", "|", "(", "\n", ";;", "|&"}
CLOSING = ")"
NOT_A_COMMAND = ""  # first word of the words after a ')'

REDIRECTIONS = re.compile(r"\d*(<|>|>>|<<|<&|>&|<>|>\|)")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")
# Reserved words that may stand before a command ('do cmd', 'if ! cmd').
LEADING_WORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "fi",
                 "done", "esac"}
# Commands whose own first word is not a program: the whole command is skipped.
SKIPPED_COMMANDS = {"for", "case", "function", "select"}
# Commands that run a program the text cannot place (another root's, another
# namespace's, a folder's): they are programs, what they run is not followed.
UNFOLLOWED_COMMANDS = {"chroot", "nsenter", "su", "start-stop-daemon", "run-parts"}
# busybox sh's builtins that are not applets too (eval: a string the shell builds).
SHELL_BUILTINS = {"cd", ":", "alias", "bg", "break", "builtin", "continue", "eval",
                  "exit", "export", "fg", "getopts", "hash", "jobs", "let",
                  "local", "read", "readonly", "return", "set", "shift", "times",
                  "trap", "type", "ulimit", "umask", "unalias", "unset", "wait", "[[",
                  "true", "false", "echo", "printf", "test", "[", "kill"}
SHELLS = {"sh", "ash", "bash", "dash", "hush"}
# Wrappers that are the shell's own builtins: no program of their own to find.
BUILTIN_WRAPPERS = {"exec", "command"}
SOURCING = {".", "source"}  # shell builtins that read a file as commands
# Shell options that take the next word (sh -o errexit).
SHELL_OPTIONS_WITH_VALUE = {"-o", "+o"}
ARITHMETIC = re.compile(r"\$\(\([^()]*(\([^()]*\)[^()]*)*\)\)")


@dataclass(frozen=True)
class Wrapper:
    """A command that runs a program given after its own words: options (some
    taking the next word as their value), then `operands` words of its own
    (timeout's duration), then the program. Some options mean it runs none
    (taskset -p PID)."""
    with_value: frozenset[str] = frozenset()
    operands: int = 0
    no_program: frozenset[str] = frozenset()
    assignments: bool = False  # NAME=VALUE words before the program (env)


def _options(*names: str) -> frozenset[str]:
    return frozenset(names)


# Spelled as busybox and GNU coreutils/util-linux spell them; an option not
# listed takes no value.
WRAPPERS = {
    "timeout": Wrapper(_options("-s", "-k", "--signal", "--kill-after"), operands=1),
    "env": Wrapper(_options("-u", "--unset", "-C", "--chdir"), assignments=True),
    "nice": Wrapper(_options("-n", "--adjustment")),
    "taskset": Wrapper(operands=1, no_program=_options("-p", "--pid")),
    "ionice": Wrapper(_options("-c", "-n", "--class", "--classdata"),
                      no_program=_options("-p", "-P", "-u", "--pid", "--pgid", "--uid")),
    "stdbuf": Wrapper(_options("-i", "-o", "-e", "--input", "--output", "--error")),
    "chrt": Wrapper(_options("-T", "-P", "-D", "--sched-runtime", "--sched-period",
                             "--sched-deadline"), operands=1,
                    no_program=_options("-p", "--pid", "-m", "--max")),
    "setsid": Wrapper(),
    "nohup": Wrapper(),
    "time": Wrapper(_options("-o", "-f", "--output", "--format")),
    "xargs": Wrapper(_options("-a", "-E", "-I", "-n", "-s", "-P", "-d", "-L",
                              "--arg-file", "--max-args", "--max-procs", "--delimiter")),
    "exec": Wrapper(_options("-a")),
    "command": Wrapper(no_program=_options("-v", "-V")),
    "watch": Wrapper(_options("-n", "--interval")),
    "unshare": Wrapper(),
    "linux32": Wrapper(),
    "linux64": Wrapper(),
    "setarch": Wrapper(operands=1),
    "busybox": Wrapper(),  # busybox APPLET: the applet is found as /bin/APPLET is
    # the harness's phase helper: phase [-s TEXT] [-e TEXT] NAME OPS COMMAND...
    "phase": Wrapper(_options("-s", "-e"), operands=2),
}


@dataclass(frozen=True)
class Named:
    """A word of a run line that the guest must have something for."""
    word: str
    role: str  # PROGRAM, SCRIPT or ARGUMENT


def _tokens(run: str) -> list[str]:
    """Shell words and operators; $(( )) arithmetic dropped, $( and ` opening
    a command like '(', the closing ` like ')'."""
    text = ARITHMETIC.sub("0", run).replace("$(", " ( ")
    parts = text.split("`")
    text = "".join(part + (" ( " if i % 2 == 0 else " ) ") for i, part in enumerate(parts[:-1]))
    text += parts[-1]
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: sh -e will say so at boot
        return []


def _commands(tokens: list[str]) -> list[list[str]]:
    commands: list[list[str]] = [[]]
    skip_next = False
    for token in tokens:
        if token in SEPARATORS:
            commands.append([])
        elif token == CLOSING:
            commands.append([NOT_A_COMMAND])
        elif skip_next:
            skip_next = False
        elif REDIRECTIONS.fullmatch(token):
            skip_next = True  # the file it redirects to
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _option(wrapper: Wrapper, words: list[str]) -> tuple[int, bool]:
    """How many words the option at words[0] takes, and whether it means the
    wrapper runs no program: '-s KILL' 2, '-sKILL' and '--signal=KILL' 1."""
    word = words[0]
    if word.startswith("--"):
        name = word.split("=", 1)[0]
        takes = name in wrapper.with_value and "=" not in word
        return 1 + takes, name in wrapper.no_program
    for i, letter in enumerate(word[1:], 1):
        if f"-{letter}" in wrapper.no_program:
            return 1, True
        if f"-{letter}" in wrapper.with_value:
            return 1 + (i == len(word) - 1), False  # the rest of the word is its value
    return 1, False


def _past_wrapper(wrapper: Wrapper, words: list[str]) -> list[str]:
    """The words from the program a wrapper runs on ([] if it runs none)."""
    while words and words[0].startswith("-") and words[0] != "-":
        if words[0] == "--":
            words = words[1:]
            break
        if words[0][1:].isdigit():  # nice -10 PROG: the old spelling of -n 10
            words = words[1:]
            continue
        taken, runs_none = _option(wrapper, words)
        if runs_none:
            return []
        words = words[taken:]
    if wrapper.assignments:
        while words and (ASSIGNMENT.fullmatch(words[0]) or words[0] == "-"):
            words = words[1:]
    return words[wrapper.operands:]


def _shell(words: list[str]) -> list[Named]:
    """sh's own words: the string of -c read as a run line, or the script it
    reads (none with -s: it reads standard input)."""
    i, flags = 0, ""
    while i < len(words) and words[i][:1] in ("-", "+") and words[i] not in ("-", "--"):
        flags += words[i][1:] if words[i][0] == "-" else ""
        i += 2 if words[i] in SHELL_OPTIONS_WITH_VALUE else 1
    rest = words[i + (words[i:i + 1] == ["--"]):]
    if "c" in flags:
        return named(rest[0]) if rest else []
    if rest and "s" not in flags and rest[0] != "-" and "$" not in rest[0]:
        return [Named(rest[0], SCRIPT)] + _arguments(rest[1:])
    return []


def _arguments(words: list[str]) -> list[Named]:
    return [Named(w, ARGUMENT) for w in words if "/" in w and "$" not in w]


def _command(words: list[str]) -> list[Named]:
    """What one command names: its program through its wrappers, and so on."""
    found: list[Named] = []
    while words:
        word = words[0]
        if word in LEADING_WORDS or ASSIGNMENT.fullmatch(word):
            words = words[1:]
        elif word in WRAPPERS:
            if word not in BUILTIN_WRAPPERS:
                found.append(Named(word, PROGRAM))
            words = _past_wrapper(WRAPPERS[word], words[1:])
        elif "$" in word or word in SHELL_BUILTINS:
            return found
        elif word in UNFOLLOWED_COMMANDS:
            return found + [Named(word, PROGRAM)]
        elif word in SOURCING:
            return found + ([Named(words[1], SCRIPT)] if len(words) > 1 and
                            "$" not in words[1] else [])
        elif word in SHELLS:
            return found + [Named(word, PROGRAM)] + _shell(words[1:])
        else:
            return found + [Named(word, PROGRAM)] + _arguments(words[1:])
    return found


def named(run: str) -> list[Named]:
    """Everything the commands of a line name, in order, each once."""
    found: list[Named] = []
    for words in _commands(_tokens(run)):
        if words[0] in SKIPPED_COMMANDS or words[0] == NOT_A_COMMAND:
            continue
        found += _command(words)
    return list(dict.fromkeys(found))


def programs(run: str) -> list[str]:
    """The programs the line runs (wrappers included), in order."""
    return [n.word for n in named(run) if n.role == PROGRAM]
