"""The programs a run line calls, as far as the text shows them.

A run line is one line of shell for busybox sh. check-workloads resolves
each program it calls as the guest will (guest/deps.py): on the guest's
PATH, or at the path written. What only the running shell knows is left
to the boot (a command not found there ends the step with exit 127):
words built from variables or command output, programs the line itself
makes under the work directory or /tmp, the inside of `sh -c '...'`.
"""

from __future__ import annotations

import re
import shlex

# Words that end one command and begin another; after ')' the words go on
# being arguments of the command around it ('echo $(date) later').
SEPARATORS = {";", "&", "&&", "||", "|", "(", "\n", ";;", "|&"}
CLOSING = ")"
NOT_A_COMMAND = ""  # first word of the words after a ')'

REDIRECTIONS = re.compile(r"\d*(<|>|>>|<<|<&|>&|<>|>\|)")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")
# Reserved words that may stand before a command ('do cmd', 'if ! cmd').
LEADING_WORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "fi",
                 "done", "esac", "time"}
# Commands whose own first word is not a program: the whole command is skipped.
SKIPPED_COMMANDS = {"for", "case", "function", "select"}
# busybox sh's builtins that are not applets too.
SHELL_BUILTINS = {"cd", ".", ":", "alias", "bg", "break", "builtin", "command", "continue",
                  "eval", "exec", "exit", "export", "fg", "getopts", "hash", "jobs", "let",
                  "local", "read", "readonly", "return", "set", "shift", "source", "times",
                  "trap", "type", "ulimit", "umask", "unalias", "unset", "wait", "[[",
                  "true", "false", "echo", "printf", "test", "[", "kill"}
# Commands that run the command after their own options: the harness's phase
# helper (phase [-s TEXT] [-e TEXT] NAME OPS COMMAND...), exec and env.
ARITHMETIC = re.compile(r"\$\(\([^()]*(\([^()]*\)[^()]*)*\)\)")


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


def _after_wrappers(words: list[str]) -> list[str]:
    """The words from the program on: assignments, reserved words, exec, env
    and the phase helper's own arguments skipped."""
    while words:
        word = words[0]
        if word in LEADING_WORDS or ASSIGNMENT.fullmatch(word) or word in ("exec", "command"):
            words = words[1:]
        elif word == "env":
            words = words[1:]
            while words and (words[0].startswith("-") or ASSIGNMENT.fullmatch(words[0])):
                words = words[1:]
        elif word == "phase":
            words = words[1:]
            while len(words) >= 2 and words[0] in ("-s", "-e"):
                words = words[2:]
            words = words[2:]  # NAME OPS
        else:
            break
    return words


def programs(run: str) -> list[str]:
    """The program of every command of the line that the text shows, in order."""
    found = []
    for words in _commands(_tokens(run)):
        if words[0] in SKIPPED_COMMANDS or words[0] == NOT_A_COMMAND:
            continue
        words = _after_wrappers(words)
        if not words or words[0] in SHELL_BUILTINS or "$" in words[0]:
            continue
        found.append(words[0])
    return list(dict.fromkeys(found))
