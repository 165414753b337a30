"""The environment of the JVMs a test starts in a process of their own for a short while (a Connect server,
a cluster, a job's driver): the C1 compiler alone. On a tiny lake they then spend less of the test
machine's two cores compiling (a spark-submit here: 47 -> 29 CPU seconds); the suite's own long-lived
driver keeps the default, whose C2 code pays off over hundreds of runs. Java notes the setting on stderr
("Picked up JDK_JAVA_OPTIONS")."""

QUICK_JVM = {"JDK_JAVA_OPTIONS": "-XX:TieredStopAtLevel=1"}
