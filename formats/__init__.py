"""The suite's notations, with no device, process or network behind them: amounts of money as
people say them, SSML as sentence-at-a-time engines say it, other engines' phonemes in
espeak-ng's alphabet, and the file names of a recorded session. The bottom floor: anything may
use them, they use nothing of the suite."""
