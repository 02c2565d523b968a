# Change nothing and hope that noise beats the best.
true
