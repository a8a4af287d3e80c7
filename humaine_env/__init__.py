"""The suite, the top floor: the ``humaine-env`` command line (which finds the subcommands each
package registers) and the supervisor of ``humaine-env run``, which knows every worker."""
