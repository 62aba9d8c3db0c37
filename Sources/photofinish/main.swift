// photofinish: the command line (see README).
print("photofinish: under construction")
