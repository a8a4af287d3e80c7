"""Static files of the operator console (a package only so that installs ship them)."""
