"""man/sprof.1 documents every stats-query command and every flag its --help lists."""
import os
import re
import unittest

from sprof_testlib import SOURCE_DIR, run_sprof

COMMANDS = ["list-stats", "nodes", "fetch-by-step", "fetch-by-time", "between-modes",
            "pre-step-zero", "post-hook-close", "by-phase"]


class ManPageTest(unittest.TestCase):
    def test_every_flag_documented(self):
        with open(os.path.join(SOURCE_DIR, "man", "sprof.1")) as f:
            man = f.read().replace("\\-", "-")
        top = run_sprof("--help", check=0).stdout
        for command in COMMANDS:
            with self.subTest(command=command):
                self.assertIn(command, top)
                match = re.search(r'^\.SS "sprof %s .*?(?=^\.S[SH] )' % re.escape(command), man,
                                  re.S | re.M)
                self.assertIsNotNone(match, "no .SS section for %s" % command)
                section = match.group(0)
                help_text = run_sprof(command, "--help", check=0).stdout
                flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])\b", help_text))
                flags.discard("-h")
                flags.discard("--help")
                self.assertTrue(flags)
                for flag in sorted(flags):
                    documented = re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(flag), section)
                    self.assertTrue(documented, "%s %s is not in man/sprof.1" % (command, flag))


if __name__ == "__main__":
    unittest.main()
