"""man/sprof.1 and the README are true to the binary: every command `sprof --help` lists has a man
page section that documents each flag its --help lists, every option a section documents is one the
command has, and no sentence of either names a command or a command's flag that does not exist."""
import os
import re
import unittest

from sprof_testlib import SOURCE_DIR, run_sprof

FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])")


def read(path):
    with open(os.path.join(SOURCE_DIR, path)) as f:
        return f.read()


def man_text():
    # Roff's escaped hyphen and font changes out of the way, so flags read as they are typed.
    return re.sub(r"\\f[BIRP]|\\&", "", read("man/sprof.1").replace("\\-", "-"))


def help_flags(*command):
    text = run_sprof(*command, "--help", check=0).stdout
    options = text.split("Subcommands:")[0]
    return set(FLAG.findall(options)) - {"-h", "--help"}


def commands():
    text = run_sprof("--help", check=0).stdout
    listed = text.split("Subcommands:", 1)[1]
    # "  analyze, analyse   ..." lists a command with its aliases: the name is the first.
    return re.findall(r"^  ([a-z][a-z-]+)[ ,]", listed, re.M)


def sections(man):
    """Each .SS "sprof CMD ..." section's text, by command."""
    found = {}
    for match in re.finditer(r'^\.SS "sprof ([a-z][a-z-]+).*?(?=^\.S[SH] )', man, re.S | re.M):
        found[match.group(1)] = match.group(0)
    return found


def documented_options(text):
    """The options a piece of the man page documents: the flags of each .TP item's tag line."""
    tags = re.findall(r"^\.TP\n(\.[A-Z]+ .*)$", text, re.M)
    return {flag for tag in tags for flag in FLAG.findall(tag)}


def mentions(text):
    """Every 'sprof CMD ...flags' written as a command line: the command word and the flags that
    follow it on the same line, up to a sentence's end or the next sprof."""
    for line in text.splitlines():
        line = re.sub(r"^\.[A-Z]+ ", "", line).replace('"', " ")
        for match in re.finditer(r"(?<![\w/.-])sprof ([a-z][a-z-]*)([^`;|]*)", line):
            word, rest = match.group(1), match.group(2)
            rest = re.split(r"(?<![\w/])sprof |[.,:](?:\s|$)", rest)[0]
            yield word, set(FLAG.findall(rest)), line


class ManPageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.man = man_text()
        cls.commands = commands()
        cls.flags = {command: help_flags(command) for command in cls.commands}
        cls.global_flags = help_flags()
        cls.sections = sections(cls.man)

    def test_every_command_and_flag_documented(self):
        self.assertGreaterEqual(len(self.commands), 19)
        for command in self.commands:
            with self.subTest(command=command):
                self.assertIn(command, self.sections, "no .SS section for %s" % command)
                section = self.sections[command]
                for flag in sorted(self.flags[command]):
                    documented = re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(flag), section)
                    self.assertTrue(documented, "%s %s is not in man/sprof.1" % (command, flag))

    def test_every_global_option_documented(self):
        glob = re.search(r"^\.SH GLOBAL OPTIONS.*?(?=^\.SH )", self.man, re.S | re.M).group(0)
        self.assertEqual(documented_options(glob) - {"-h", "--help"}, self.global_flags)

    def test_every_documented_option_exists(self):
        for command, section in sorted(self.sections.items()):
            with self.subTest(command=command):
                self.assertIn(command, self.commands, "man/sprof.1 documents no such command")
                extra = documented_options(section) - self.flags[command] - self.global_flags - {"-h", "--help"}
                self.assertFalse(extra, "man/sprof.1 documents %s %s, which --help does not list"
                                 % (command, " ".join(sorted(extra))))

    def test_no_command_line_names_what_does_not_exist(self):
        for name, text in (("man/sprof.1", self.man), ("README.md", read("README.md"))):
            seen = 0
            for word, flags, line in mentions(text):
                if word not in self.commands:
                    # Prose such as "sprof records" or "sprof is": only words that look like a
                    # command (a known command's prefix or a hyphenated word) must be commands.
                    looks = "-" in word or any(c.startswith(word) or word.startswith(c) for c in self.commands)
                    self.assertFalse(looks and word not in ("records", "writes", "reads", "reports", "recorded", "differs"),
                                     "%s names 'sprof %s', no such command: %s" % (name, word, line))
                    continue
                seen += 1
                unknown = flags - self.flags[word] - self.global_flags - {"-h", "--help"}
                self.assertFalse(unknown, "%s: 'sprof %s' has no %s: %s" % (name, word, " ".join(sorted(unknown)), line))
            self.assertGreater(seen, 10, name)

    def test_readme_lists_every_stage(self):
        stages = re.findall(r"^sprof_stage\((\w+)", read("lib/stages.cmake"), re.M)
        layout = re.search(r"one folder per pipeline stage under `lib/src/` \((.*?)\)", read("README.md"), re.S)
        self.assertIsNotNone(layout, "README.md's Layout names no stages")
        self.assertEqual(re.findall(r"`(\w+)`", layout.group(1)), stages)
        self.assertEqual(sorted(stages), sorted(d for d in os.listdir(os.path.join(SOURCE_DIR, "lib", "src"))
                                                if os.path.isdir(os.path.join(SOURCE_DIR, "lib", "src", d))))


if __name__ == "__main__":
    unittest.main()
