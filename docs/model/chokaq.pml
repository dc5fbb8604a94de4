/*
 * chokaq.pml: the job protocol of chokaq-go, for SPIN 6.
 *
 * docs/model/README.md explains every process and variable, maps every
 * step to the store statement or processor function it stands for, and
 * says what the bound covers; docs/adr/0021-formal-model.md says what the
 * model proves and what it cannot. run_checks.sh runs it (`make model`).
 *
 * Every store statement is one d_step: the model takes a statement as
 * atomic and fenced, which SQL Server's locks give each statement (the
 * SQL tests and ADRs 0015 and 0016 argue that separately). A call made of
 * several statements (a Transition with more than one list, a claim
 * retried after a lost reply) is several steps, and other steps
 * interleave between them. SAY narrates a counterexample when it is
 * replayed (pan -r); only a verifier built with -DNARRATE has the text
 * (MODEL_VERBOSE=1), since the search itself never prints.
 *
 * Broken variants: each is one #define (run_checks.sh passes it as -D),
 * and must make the property named beside it fail.
 *   #define BROKEN_NO_LEASE_BUMP         I1  a claim does not add one to RunLease
 *   #define BROKEN_COMPLETE_NO_LEASE     I1  complete matches Id and Status, not RunLease
 *   #define BROKEN_START_NO_STATUS       I1  start matches Id and RunLease, not Status
 *   #define BROKEN_ADOPT_BY_WORKER       I1  adoption matches WorkerId, not ClaimId
 *   #define BROKEN_SPLIT_MOVE            I2  complete deletes, then inserts, in two statements
 *   #define BROKEN_PHASE1_BUMPS_ATTEMPT  I3  rescue phase 1 adds one to AttemptCount
 *   #define BROKEN_NO_HEARTBEAT_FLOOR    I3  phase 2 ignores the heartbeat maximum a start recorded
 *   #define BROKEN_ZOMBIE_TO_PENDING     I4  rescue phase 2 sends expired jobs back to Pending
 *   #define BROKEN_RECOVER_WHILE_BEATING I4  phase 2 recovers a retry-policy job without waiting for its silence
 *   #define BROKEN_COUNT_OUTSIDE_LOCK    I6  the claim counts active jobs before it locks the queue
 *   #define BROKEN_CHAIN_UNBEATEN        I3  a chained start's job is beaten only once its start is confirmed
 *   #define BROKEN_WAIT_FOR_WAKEUP       L1  after a probe that missed, the fetch loop waits for a wake-up, not the next poll
 *   #define BROKEN_OUTPUT_UNFENCED       I1  complete's output list is joined on Id alone: a refused move writes its output
 *   #define BROKEN_UNIQUE_NO_LOCK        IU  enqueue reads the key's row without the key lock, and inserts in a later statement
 *   #define BROKEN_RESURRECT_KEEPS_KEY   IU  resurrect keeps the job's key without looking at the key's row
 *   #define BROKEN_KEY_COUNT_OUTSIDE_LOCK I6K a keyed claim counts the key's active jobs before it takes the flow lock
 *   #define BROKEN_SEQ_ONLY_IDLE         IS  a sequence claim checks only that no member runs, not that the job is the first unfinished
 *   #define BROKEN_UNPARK_ON_CANDIDATES_ONLY L1 a claim unparks only when it picks a keyed candidate
 *   #define BROKEN_RELEASE_BEFORE_COMMIT IW1 a parent's complete releases its child when the handler returns, before the move commits
 *   #define BROKEN_RELEASE_LOST_ON_RESCUE IW2 rescue phases 2 and 3 move a parent to the DLQ without applying its child's policy
 *   #define BROKEN_OWED_CLEARED_BEFORE_WALK_DONE IW2 (scenario 12) a release step clears the owed mark when its budget cuts the walk
 *   #define BROKEN_MOVE_WITHOUT_OWED     IW2 (scenario 12) the parent's complete writes no owed mark on its archive row
 */

#ifdef NARRATE
#define SAY(...) printf(__VA_ARGS__)
#else
#define SAY(...) skip
#endif

/* ---- the bound (README, "The bound") ---- */
#define NJ 2            /* jobs */
#define NW 2            /* processor processes */
#define NK 3            /* worker goroutines: 0 (and 1, scenario 6) in process 0, 2 in process 1 */
#ifndef SCENARIO
#define SCENARIO 0      /* 0: every scenario in one search; n: scenario n alone (init) */
#endif
#ifndef QSPLIT
#define QSPLIT 2        /* job 1 in queue 0 (0), in queue 1 (1), or either (2) */
#endif

/* ---- settings, in ticks of the store's clock: the smallest values that keep
 * every ordering the rules rely on (ReleaseAfter < FetchedJobTimeout, the
 * heartbeat interval within each zombie timeout, queue 1's own timeouts
 * apart from the global ones) ---- */
#define HBMAX 1         /* HeartbeatIntervalMax */
#define RA 1            /* ReleaseAfter = FetchedJobTimeout / 2 */
#define FT 2            /* FetchedJobTimeout (rescue phase 1) */
#define ZT0 2           /* ProcessingZombieTimeout: queue 0 sets no zombie timeout */
#define ZT1 0           /* queue 1's ZombieTimeoutSeconds: below the heartbeat interval, as an
                           operator or another process may set it (only the run-time paths
                           refuse it); the floor of ZEFF keeps its live jobs alive */
#define ET0 2           /* DefaultTimeout: queue 0 sets no execution timeout */
#define ET1 1           /* queue 1's ExecutionTimeoutSeconds */
#define MAXW0 1         /* queue 0's MaxWorkers; queue 1 has none */
#define CAPU 3          /* every rule asks only whether an age passed a timeout: an age stops one
                           tick past the longest it meets, and the clock runs forever in finite states */
#define CAPH 3
#define CAPS 3
#define ZT(q) ((q) == 0 -> ZT0 : ZT1)
/* The silence phase 2 waits for (jobs.ZombieTimeout): the queue's zombie
 * timeout, but never less than the heartbeat maximum every start records
 * (StartParams.HeartbeatMax; the code waits 3 x it, a margin for beats a
 * loaded process misses, which the model's live processes never do). */
#ifdef BROKEN_NO_HEARTBEAT_FLOOR
#define ZEFF(q) ZT(q)
#else
#define ZEFF(q) (ZT(q) > HBMAX -> ZT(q) : HBMAX)
#endif
#define ET(q) ((q) == 0 -> ET0 : ET1)
#define ZCAP 1          /* a retry-policy kind's ZombieRetryCap */
/* jobs.RecoversZombie, and no cancel requested */
#define RECOVERS(j)   (zpol[j] && zused[j] < ZCAP && !cr[j])

/* JobsHot.Status */
#define PEND 0
#define FETCH 1
#define PROC 2
#define WAIT 3          /* parked by flow control (scenario 10): not claimable */
#define WPAR 4          /* a workflow task waiting for its parent (scenarios 11, 12): in no claim index */

/* ---- the store: one row per job, and the table that holds it ---- */
bit  inHot[NJ] = 1;     /* both jobs enqueued: Pending and due */
bit  inArch[NJ], inDlq[NJ];
bit  out[NJ];           /* OutputJson: the output its handler recorded, written by its complete only (ADR 0028) */
byte st[NJ];            /* Status, while hot */
byte att[NJ];           /* AttemptCount */
byte snz[NJ];           /* SnoozeCount */
bit  due[NJ] = 1;       /* ScheduledAtUtc <= now */
bit  cr[NJ];            /* CancelRequestedUtc IS NOT NULL */
byte ageU[NJ];          /* now - LastUpdatedUtc, while Fetched */
byte ageH[NJ];          /* now - HeartbeatUtc, while Processing */
byte ageS[NJ];          /* now - StartedAtUtc: DeadlineUtc < now is ageS > the queue's timeout */
byte cid[NJ];           /* p + 1: Fetched under the ClaimId of a claim of process p whose reply was lost */
byte qof[NJ];           /* Queue */
bit  zpol[NJ];          /* ZombieRetryCap > 0: the job's kind opted into zombie retries (cap ZCAP) */
byte zused[NJ];         /* ZombieRetries */
#ifdef BROKEN_ADOPT_BY_WORKER
byte wid[NJ];           /* WorkerId: p + 1, 0 for NULL */
#endif

/* ---- unique keys (scenario 9): one key, which both jobs carry ---- */
bit  born[NJ] = 1;      /* the job has a row in a table: enqueued, not yet trimmed */
byte enq[NJ];           /* its Enqueue */
#define E_NONE 0        /* enqueued before the run (scenarios 1-8): not modelled */
#define E_WANT 1        /* an Enqueue of it, with the key, is to come */
#define E_READ 2        /* BROKEN_UNIQUE_NO_LOCK only: it read no holder; its insert is to come */
#define E_MADE 3        /* it created the job */
#define E_DUP 4         /* it was refused, the holder returned as the duplicate: the job is never born */
bit  hasKey[NJ];        /* the job carries the key (UniqueKey IS NOT NULL) */
byte krow;              /* JobUniqueKeys: job + 1 its row points at, 0 no row */
bit  karch, kdlq;       /* the key's states count archived jobs, dead letters */

/* ---- flow control (scenario 10): both jobs in queue 1 carry one concurrency key
 * (limit 1) or one sequence key (job 0 enqueued first) ---- */
byte fkind;             /* 0 none, F_KEY, F_SEQ */
#define F_KEY 1
#define F_SEQ 2
bit  fhold;             /* the queue's SequenceOnDeadLetter is hold (else continue) */
bit  dlc[NJ];           /* in the DLQ as cancelled (its cancel was requested): never holds a sequence */
#ifdef BROKEN_KEY_COUNT_OUTSIDE_LOCK
byte kseen[NW];         /* the key's active count + 1, read before the flow lock */
#endif

/* ---- workflows (scenario 11): job 1 is a task of one workflow that runs after
 * job 0, its parent; both inserted together (IW3), job 1 waiting ---- */
bit  wf;                /* scenarios 11 and 12 */
byte wpol;              /* job 1's OnParentFailure */
#define P_CANCEL 0      /* DependencyCancel: to the DLQ, ReasonDependencyFailed */
#define P_ANY 1         /* DependencyRunAnyway: the failed parent counts as done */
#define P_WAIT 2        /* DependencyWait: waits, for a resurrect of the parent */
/* Scenario 12 is scenario 11 under the SQL Server store's release (ADR 0034,
 * sqlserver/queries.go qReleaseTasks): a move of job 0 out of JobsHot touches
 * no child; it writes the owed mark (ReleaseCursor 0) on job 0's new row in
 * the move's own statement, and a later release step, run by a claim of any
 * process, pays it. Job 0 has a second child, X, with the lower Id, so the
 * walk reaches job 1's edge only from the cursor a first step left: the
 * step's edge budget is 1 (the store's is releaseMaxEdges). X stands for a
 * waiting task and nothing more: it is only released, dead-lettered or left
 * waiting by the steps; a released X would run as job 1 does. The marks of
 * job 1's and X's own rows are not modelled: neither has children, so a
 * step that takes them walks no edge and changes no hot row. */
bit  sqlrel;            /* scenario 12 */
bit  ow;                /* job 0's row owes its children their release: ReleaseCursor not NULL on its
                           archive or DLQ row, or its WorkflowGone row (a purge or trim) */
byte cur;               /* that row's ReleaseCursor: 0 from the start, 1 past X's edge, 2 past job 1's */
bit  gfail;             /* job 0 is gone from the DLQ, not the archive (WorkflowGone.Failed) */
byte xst;                /* child X */
#define X_NONE 0        /* no X (every other scenario) */
#define X_WAIT 1        /* waiting for job 0 (Status 5) */
#define X_READY 2       /* released: Pending */
#define X_DEAD 3        /* dead-lettered, DependencyFailed */

/* ---- processor processes ---- */
bit  frozen[NW], dead[NW], stopping[NW];
byte bj[NW];            /* the prefetch buffer (PrefetchSize 1): job + 1, or 0 */
bit  bcur[NW];          /* its ref's lease is the row's RunLease */
byte bs[NW];            /* its SnoozeCount, as claimed */
byte fl[NW];            /* queue + 1 while Claim retries after a lost reply */
byte late[NW];          /* queue + 1 while a claim attempt the network held up may still run */
#ifdef BROKEN_COUNT_OUTSIDE_LOCK
byte seen[NW];          /* queue 0's active count + 1, read before the lock */
#endif

/* worker goroutines: processor.execute for one job */
#define G_IDLE 0
#define G_START 1       /* its start sent (or queued in the batcher); after a lost reply, sent again */
#define G_RUN 4         /* handler running; the heartbeater beats the job */
#define G_OUT 5         /* the handler returned: its outcome is being written */
#define G_SNOOZE 6      /* a snooze is being written */
byte gph[NK];
byte gj[NK];            /* the job */
bit  gcur[NK];          /* the ref's lease is the row's RunLease */
byte ga[NK];            /* AttemptCount, as Start reported it */
byte gs[NK];            /* SnoozeCount, as claimed */
byte gc[NK];            /* context.Cause of the handler's context: the first cancel wins */
#define C_NONE 0
#define C_LOST 1        /* errLeaseLost */
#define C_CANCEL 2      /* ErrCancelled */
#define C_SHUT 3        /* errShutdown */
byte gk[NK];            /* the transition to write */
#define K_START 1
#define K_COMPLETE 2
#define K_RETRY 3       /* Retry after the backoff */
#define K_RETRY0 4      /* Retry with no delay */
#define K_DL 5
byte gq[NK];            /* the request in the batcher */
#define Q_NONE 0
#define Q_QUEUED 1
#define Q_INFL 2
byte gres[NK];          /* its answer */
#define RES_OK 1
#define RES_LOST 2      /* ErrLeaseLost */
#define RES_CANCELLED 3 /* ErrCancelled: the store dead-lettered the job instead */
#define RES_CALLFAIL 4  /* the call failed or its reply was lost */
bit  greg[NK];          /* in the heartbeater: from before the start goes out */
/* the next job, whose start rides with the outcome being written (chained,
 * batched goroutines only): its buffer slot moved here */
byte gn[NK];            /* job + 1, or 0 */
bit  gncur[NK];         /* its ref's lease is the row's RunLease */
byte gns[NK];           /* its SnoozeCount, as claimed */
byte gnres[NK];         /* its start's answer */
bit  gnreg[NK];         /* its beat is in the heartbeater */
bit  gcan[NK];          /* beat.cancelled: an operator's cancel reached the handler */
byte bstage;            /* process 0's call in flight: 0 none, 1-4 the next list, 5 none left */

/* handler results */
#define R_NIL 0
#define R_ERR 1
#define R_SNOOZE 2

/* ---- the scenario: what may happen in one run, set once by init ---- */
byte leaveB;            /* crashes plus Stops (at most NW - 1: one process stays) */
byte freezeB;           /* freezes (each resumes) */
byte lossB;             /* calls whose reply is lost */
byte missB;             /* idle probes that miss a due job (ADR 0027: an uncommitted row read past) */
byte wt[NW];            /* process w's last probe missed: it waits for its next poll */
byte staleB;            /* buffered jobs released for waiting ReleaseAfter */
byte cancelB;           /* operator cancels */
byte resB;              /* operator resurrects */
byte trimB;             /* trims or purges of a finished job */
byte maxatt = 1;        /* MaxAttempts */
byte maxsnz = 0;        /* MaxSnoozes */
bit  group;             /* process 0 runs two goroutines, their calls group-committed */

/* ---- ghosts: what the properties read; no step's guard reads them ---- */
bit  kept[NJ];          /* Processing, and its holder has stayed live since the start */
byte attc[NJ];          /* AttemptCount when claimed */
bit  badI1, badI3a, badI3b, badI4, badIU, badIS, badIW1;
byte rstep;             /* process + 1 whose release step began job 0's walk (scenario 12) */
bit  wfcrash;           /* job 1 released by a step of a process other than that one, which has crashed */
bit  pok;               /* job 1 may run (IW1): job 0 archived, or dead-lettered under run-anyway,
                           or job 1 resurrected with job 0 not hot (the operator's word) */
bit  pk[NJ];            /* parked since it last left a status by a move (W_flow_unparked) */
#ifdef BROKEN_SPLIT_MOVE
bit  limbo[NJ];         /* deleted from JobsHot, not yet inserted into JobsArchive */
#endif

/* temporaries of d_steps: not part of the state */
hidden byte t_j, t_n, t_k, t_s;
hidden byte s_h, s_a, s_d, s_st, s_att, s_snz, s_due, s_cr, s_u, s_hb, s_s, s_cid, s_out, s_live;

#define PW(k)         ((k) < 2 -> 0 : 1)
#define ALIVE(w)      (!dead[w] && !frozen[w])
#define BATCHED(k)    (group && (k) < 2)
#define ACT(j)        (st[j] == FETCH || st[j] == PROC)
#define LIVE(j, c)    ((c) && inHot[j] && ACT(j))
#define RUNNING(j, c) ((c) && inHot[j] && st[j] == PROC)

/* Job j holds the key: the row points at it, and it is in a table the key
 * counts (the hot table always). Leaving that table releases the key
 * without touching the row; a row left pointing at a trimmed job holds
 * nothing. KHELD: the row's job holds it. */
#define HOLDS(j)      (hasKey[j] && krow == (j) + 1 && (inHot[j] || (inArch[j] && karch) || (inDlq[j] && kdlq)))
#define KHELD         ((krow == 1 && HOLDS(0)) || (krow == 2 && HOLDS(1)))

/* the holders of job j's current lease */
#define BHOLD(w, j)   (bj[w] == (j) + 1 && bcur[w])
#define GHOLD(k, j)   (gph[k] != G_IDLE && gj[k] == (j) && gcur[k])
#define GNHOLD(k, j)  (gn[k] == (j) + 1 && gncur[k])
#define HOLDERS(j)    (BHOLD(0, j) + BHOLD(1, j) + GHOLD(0, j) + GHOLD(1, j) + GHOLD(2, j) + GNHOLD(0, j) + GNHOLD(1, j))
#define LHELD(j)      ((ALIVE(0) && (BHOLD(0, j) || GHOLD(0, j) || GHOLD(1, j) || GNHOLD(0, j) || GNHOLD(1, j))) || \
                       (ALIVE(1) && (BHOLD(1, j) || GHOLD(2, j))))

/* a queue's Fetched plus Processing jobs */
#define ACTIVE(q)     ((inHot[0] && ACT(0) && qof[0] == (q)) + (inHot[1] && ACT(1) && qof[1] == (q)))
#define DUEPEND(j)    (inHot[j] && st[j] == PEND && due[j])
#ifdef BROKEN_COUNT_OUTSIDE_LOCK
#define CAPOK(w, q)   ((q) != 0 || (seen[w] > 0 && seen[w] - 1 < MAXW0))
#else
#define CAPOK(w, q)   ((q) != 0 || ACTIVE(0) < MAXW0)
#endif
/* Flow control (scenario 10, ADR 0031): under the queue's flow lock a keyed
 * claim counts the key's Fetched plus Processing jobs (both jobs carry the
 * key, limit 1); a sequence member is claimable only while no member is
 * Fetched or Processing and it is the first unfinished member (lowest Id:
 * hot in any status, or dead-lettered, not cancelled, under hold). */
#define KACT(j)       (inHot[j] && ACT(j))
#define NOACT         (!KACT(0) && !KACT(1))
#define UNF(j)        (inHot[j] || (fhold && inDlq[j] && !dlc[j]))
#ifdef BROKEN_SEQ_ONLY_IDLE
#define SEQOK(j)      NOACT
#else
#define SEQOK(j)      (NOACT && ((j) == 0 || !UNF(0)))
#endif
#define FLOWNOW(j)    (fkind == 0 || (fkind == F_KEY && NOACT) || (fkind == F_SEQ && SEQOK(j)))
#ifdef BROKEN_KEY_COUNT_OUTSIDE_LOCK
#define FLOWOK(w, j)  (fkind == F_KEY -> kseen[w] == 1 : FLOWNOW(j))
#define FLOWBAD(w, j) (fkind == F_KEY -> kseen[w] > 1 : !FLOWNOW(j))
#define KSEEN0(w)     kseen[w] = 0
#else
#define FLOWOK(w, j)  FLOWNOW(j)
#define FLOWBAD(w, j) (!FLOWNOW(j))
#define KSEEN0(w)     skip
#endif
#define UNPARKABLE(j) (inHot[j] && st[j] == WAIT && FLOWNOW(j))
#define CLAIMABLE(w, j) (DUEPEND(j) && CAPOK(w, qof[j]) && FLOWOK(w, j))
#define FREE_TO_CLAIM(w) (fetches && ALIVE(w) && !stopping[w] && fl[w] == 0 && bj[w] == 0 && wt[w] == 0)
#ifdef BROKEN_ADOPT_BY_WORKER
#define ADOPTABLE(w, j) (inHot[j] && st[j] == FETCH && wid[j] == (w) + 1)
#define SETWID(j, v)  wid[j] = (v)
#else
#define ADOPTABLE(w, j) (inHot[j] && st[j] == FETCH && cid[j] == (w) + 1)
#define SETWID(j, v)  skip      /* only the broken adoption reads WorkerId */
#endif
#ifdef BROKEN_START_NO_STATUS
#define START_MATCH(j, c) ((c) && inHot[j] && st[j] != PROC)
#else
#define START_MATCH(j, c) (LIVE(j, c) && st[j] == FETCH)
#endif

/*
 * What a live process (neither frozen nor dead) promises about time; the
 * clock does not tick past it. T1: it beats every job whose beat it holds,
 * and answers its own store calls, within HeartbeatIntervalMax. T2: it
 * starts or releases a buffered job before the job has waited ReleaseAfter.
 * A frozen or dead process promises nothing. A job the process started in
 * a call whose reply was lost, and does not beat, is under neither promise
 * while the worker waits to send the call again (an outage may last): only
 * BROKEN_CHAIN_UNBEATEN has such a job.
 */
#define UNBEATEN(k, j) (gn[k] == (j) + 1 && !gnreg[k] && gq[k] != Q_INFL)
#define T1(j)         (inHot[j] && st[j] == PROC && kept[j] && ageH[j] >= HBMAX && !UNBEATEN(0, j) && !UNBEATEN(1, j))
#define T2(j)         (inHot[j] && st[j] == FETCH && ageU[j] >= RA && LHELD(j))
#define TIME_BLOCKED  (T1(0) || T1(1) || T2(0) || T2(1))

/* ---- fences: a statement under a lease that is not current changes nothing (I1) ---- */
inline snap(j) {
  s_h = inHot[j]; s_a = inArch[j]; s_d = inDlq[j]; s_st = st[j]; s_att = att[j]; s_snz = snz[j];
  s_due = due[j]; s_cr = cr[j]; s_u = ageU[j]; s_hb = ageH[j]; s_s = ageS[j]; s_cid = cid[j]; s_out = out[j]
}
#define CHANGED(j) (s_h != inHot[j] || s_a != inArch[j] || s_d != inDlq[j] || s_st != st[j] || \
  s_att != att[j] || s_snz != snz[j] || s_due != due[j] || s_cr != cr[j] || s_u != ageU[j] || \
  s_hb != ageH[j] || s_s != ageS[j] || s_cid != cid[j] || s_out != out[j])
inline fenceBegin(j, c) { s_live = LIVE(j, c); snap(j) }
inline fenceEnd(j) {
  if
  :: !s_live && CHANGED(j) -> badI1 = 1
  :: else -> skip
  fi
}

/* ---- moves ---- */
/* A row that leaves a status keeps nothing of it in the model (its stamps
 * no rule reads again), so states that differ only there are one state. */
inline clearHot(j) {
  st[j] = PEND; due[j] = 0; cr[j] = 0; ageU[j] = 0; ageH[j] = 0; ageS[j] = 0;
  cid[j] = 0; kept[j] = 0; attc[j] = 0; pk[j] = 0; SETWID(j, 0)
}
/* Every way back to Pending passes here; byHolder says the step is the
 * lease holder's own statement, matched on its lease (1), or rescue phase
 * 2 under the job's zombie policy (2): amended I4 allows that one only for
 * a job whose kind opted in, below its cap, and never while a live holder
 * of its lease beats it (kept). */
inline toPending(j, byHolder) {
  if
  :: st[j] == PROC && byHolder == 0 -> badI4 = 1
  :: st[j] == PROC && byHolder == 2 && (kept[j] || !RECOVERS(j)) -> badI4 = 1
  :: else -> skip
  fi;
  if
  :: st[j] == FETCH && att[j] != attc[j] -> badI3a = 1
  :: else -> skip
  fi;
  clearHot(j)
}
/* Workflows (scenario 11, ADR 0034): the parent's own move releases its
 * waiting child, or applies the child's policy, in the same statement. */
inline wfReady() {
  if
  :: !pok -> badIW1 = 1         /* released before its parent succeeded */
  :: else -> skip
  fi;
  st[1] = PEND; due[1] = 1
}
inline wfRelease() { wfReady(); SAY("job 0's move below releases job 1: Pending, claimable\n  ") }
/* Scenario 12: the move writes job 0's owed mark, in its own statement,
 * and touches no child; the walk starts again from the first edge. */
inline wfOwe() {
  ow = 1; cur = 0; rstep = 0; SAY("job 0's move below marks its new row owed (ReleaseCursor 0)\n  ")
}
inline dlqRow(j) { dlc[j] = (fkind != 0 && cr[j]); inHot[j] = 0; inDlq[j] = 1; clearHot(j); zused[j] = 0 }
inline wfArchived(j) {
  if
  :: wf && (j) == 0 ->
     pok = 1;
     if
#ifdef BROKEN_MOVE_WITHOUT_OWED
     :: sqlrel -> SAY("(broken) job 0's move below marks nothing owed\n  ")
#else
     :: sqlrel -> wfOwe()
#endif
     :: !sqlrel && inHot[1] && st[1] == WPAR -> wfRelease()
     :: else -> skip
     fi
  :: else -> skip
  fi
}
inline wfDead(j) {
  if
  :: wf && (j) == 0 ->
     if
     :: wpol == P_ANY -> pok = 1
     :: else -> skip
     fi;
     if
     :: sqlrel -> wfOwe()
     :: !sqlrel && inHot[1] && st[1] == WPAR && wpol == P_CANCEL -> dlqRow(1);
        SAY("job 0's move below dead-letters job 1, ReasonDependencyFailed\n  ")
     :: !sqlrel && inHot[1] && st[1] == WPAR && wpol == P_ANY -> wfRelease()
     :: !sqlrel && inHot[1] && st[1] == WPAR && wpol == P_WAIT -> SAY("job 0's move below leaves job 1 waiting on its failed parent\n  ")
     :: else -> skip
     fi
  :: else -> skip
  fi
}
/* Resurrect of the task: it waits only for a parent still hot; one archived or in the DLQ counts as done.
 * (The SQL store's resurrectTasks reads the task's open edges: with one resurrect a run, job 1's edge
 * is open whenever job 1 is in the DLQ, so the rule is the same.) Scenario 12: a resurrect of job 0
 * deletes its DLQ row with the owed mark; its hot row owes nothing, its waiting children wait again. */
inline wfResurrect(j) {
  if
  :: sqlrel && (j) == 0 -> ow = 0; cur = 0; rstep = 0
  :: wf && (j) == 1 && inHot[0] -> st[1] = WPAR; SAY("  job 1 waits for job 0 again\n")
  :: wf && (j) == 1 && !inHot[0] -> pok = 1
  :: else -> skip
  fi
}
inline toDLQ(j) { dlqRow(j); wfDead(j) }
/* Scenario 12: a purge or trim of job 0 writes its WorkflowGone row in the
 * purge's transaction, owed from the first edge, failed if from the DLQ. */
inline wfGone(j) {
  if
  :: sqlrel && (j) == 0 -> gfail = inDlq[0]; ow = 1; cur = 0; rstep = 0
  :: else -> skip
  fi
}
/* qReleaseTasks, one step (scenario 12): its own transaction under the
 * workflow lock, so one step at a time, atomic, and a crash comes only
 * between steps. It takes job 0's owed row as it stands and walks one edge
 * (the budget) from its cursor, in child order: X, then job 1. A waiting
 * child is released if job 0 succeeded (archived, or gone from the
 * archive) or failed under run-anyway; left waiting under wait on a parent
 * in the DLQ; else dead-lettered (DependencyFailed; a gone parent under
 * wait too). A step that spends its budget cannot tell the walk is done:
 * it keeps the cursor, and the mark is cleared (the WorkflowGone row
 * deleted) only by a step that finds no edge left. */
#define PFAILED     (inDlq[0] || (!born[0] && gfail))
#define RELEASES    (!PFAILED || wpol == P_ANY)
#define LEAVES      (inDlq[0] && wpol == P_WAIT)
inline releaseStep(w) {
  if
  :: cur == 0 ->
     if
     :: xst == X_WAIT && RELEASES ->
        if
        :: !pok -> badIW1 = 1
        :: else -> skip
        fi;
        xst = X_READY; SAY("P%d release step: job 0's edge to X: X released", w)
     :: xst == X_WAIT && !RELEASES && LEAVES -> SAY("P%d release step: job 0's edge to X: X left waiting", w)
     :: xst == X_WAIT && !RELEASES && !LEAVES -> xst = X_DEAD; SAY("P%d release step: job 0's edge to X: X dead-lettered", w)
     :: else -> SAY("P%d release step: job 0's edge to X, X not waiting", w)
     fi;
#ifdef BROKEN_OWED_CLEARED_BEFORE_WALK_DONE
     ow = 0; cur = 0; gfail = 0; rstep = 0; SAY("; (broken) the budget spent: job 0's mark cleared\n")
#else
     cur = 1; rstep = w + 1; SAY("; the budget spent: the cursor kept past X\n")
#endif
  :: cur == 1 ->
     if
     :: inHot[1] && st[1] == WPAR && RELEASES -> wfReady();
        if
        :: rstep != 0 && rstep != w + 1 && dead[rstep - 1] -> wfcrash = 1
        :: else -> skip
        fi;
        SAY("P%d release step, from the cursor: job 1 released\n", w)
     :: inHot[1] && st[1] == WPAR && !RELEASES && LEAVES -> SAY("P%d release step, from the cursor: job 1 left waiting\n", w)
     :: inHot[1] && st[1] == WPAR && !RELEASES && !LEAVES -> dlqRow(1);
        SAY("P%d release step, from the cursor: job 1 dead-lettered, DependencyFailed\n", w)
     :: else -> SAY("P%d release step, from the cursor: job 1 not waiting\n", w)
     fi;
     cur = 2
  :: cur == 2 -> ow = 0; cur = 0; gfail = 0; rstep = 0;
     SAY("P%d release step: no edge left; job 0's mark cleared\n", w)
  fi
}
inline toArchive(j) {
  inHot[j] = 0; zused[j] = 0;
#ifdef BROKEN_SPLIT_MOVE
  limbo[j] = 1;         /* the INSERT is a statement of its own */
#else
  inArch[j] = 1;
#endif
  clearHot(j);
  wfArchived(j)
}

/* A claim adds one to RunLease: no ref handed out before matches the row
 * again, since RunLease only grows. */
inline newLease(j) {
  if
  :: bj[0] == j + 1 -> bcur[0] = 0
  :: else -> skip
  fi;
  if
  :: bj[1] == j + 1 -> bcur[1] = 0
  :: else -> skip
  fi;
  t_k = 0;
  do
  :: t_k < NK ->
     if
     :: gph[t_k] != G_IDLE && gj[t_k] == j -> gcur[t_k] = 0
     :: else -> skip
     fi;
     if
     :: gn[t_k] == j + 1 -> gncur[t_k] = 0
     :: else -> skip
     fi;
     t_k++
  :: else -> break
  od
}
/* The claim's unpark, under the flow lock: a parked job whose reason is
 * gone goes back to Pending, for the next claim to judge afresh. */
inline unparkAll() {
  if
  :: UNPARKABLE(0) -> st[0] = PEND; SAY("Claim: unparks job 0\n")
  :: else -> skip
  fi;
  if
  :: UNPARKABLE(1) -> st[1] = PEND; SAY("Claim: unparks job 1\n")
  :: else -> skip
  fi
}
/* IS, checked at the claim of a sequence member (ghost) */
inline flowGhost(j) {
  if
  :: fkind == F_SEQ && (KACT(0) || KACT(1) || ((j) == 1 && UNF(0))) -> badIS = 1
  :: else -> skip
  fi
}
/* qClaim's UPDATE of one row, under the queue's lock */
inline claimRow(w, j) {
  flowGhost(j);
  if
  :: wf && (j) == 1 && !pok -> badIW1 = 1      /* IW1, at the claim (ghost) */
  :: else -> skip
  fi;
#ifndef BROKEN_NO_LEASE_BUMP
  newLease(j);
#endif
  st[j] = FETCH; due[j] = 0; ageU[j] = 0; cid[j] = 0; attc[j] = att[j]; SETWID(j, w + 1);
  KSEEN0(w);
  if
  :: fkind != 0 -> unparkAll()
  :: else -> skip
  fi
#ifdef BROKEN_COUNT_OUTSIDE_LOCK
  ; seen[w] = 0
#endif
}
inline deliver(w, j) { bj[w] = j + 1; bcur[w] = 1; bs[w] = snz[j] }

/* qRelease for one ref */
inline releaseStmt(j, c, n) {
  fenceBegin(j, c);
  if
  :: LIVE(j, c) && st[j] == FETCH -> toPending(j, 1); due[j] = 1; n = 1;
     SAY("Release(job %d): Fetched -> Pending\n", j)
  :: else -> n = 0; SAY("Release(job %d): no row matched\n", j)
  fi;
  fenceEnd(j)
}
/* qTransition's retry list: a job whose cancel was requested goes to the DLQ instead */
inline retryStmt(j, c, nodelay, res) {
  fenceBegin(j, c);
  if
  :: RUNNING(j, c) && cr[j] -> toDLQ(j); res = RES_CANCELLED;
     SAY("Retry(job %d): cancel requested, so DLQ as Cancelled (ErrCancelled)\n", j)
  :: RUNNING(j, c) && !cr[j] -> toPending(j, 1); due[j] = nodelay; res = RES_OK;
     SAY("Retry(job %d): Processing -> Pending, AttemptCount %d kept\n", j, att[j])
  :: else -> res = RES_LOST; SAY("Retry(job %d): lease lost, nothing changed\n", j)
  fi;
  fenceEnd(j)
}
/* qTransition's start list (and qStart) for job j under a ref whose lease
 * bit is c: AttemptCount as reported into a, the answer into res */
inline startRow(j, c, a, res) {
  fenceBegin(j, c);
  if
  :: START_MATCH(j, c) ->
     if
     :: st[j] == FETCH -> SAY("Start(job %d): Fetched -> Processing, attempt %d\n", j, att[j] + 1)
     :: else -> SAY("Start(job %d): Pending -> Processing, attempt %d\n", j, att[j] + 1)
     fi;
     st[j] = PROC; att[j] = att[j] + 1; ageU[j] = 0; ageH[j] = 0; ageS[j] = 0;
     cid[j] = 0; attc[j] = 0; kept[j] = 1; a = att[j]; res = RES_OK
  :: RUNNING(j, c) -> a = att[j]; res = RES_OK;
     SAY("Start(job %d): its own start, repeated: reported again\n", j)
  :: else -> res = RES_LOST; SAY("Start(job %d): lease lost, nothing changed\n", j)
  fi;
  fenceEnd(j)
}
inline startStmt(k) { t_j = gj[k]; startRow(t_j, gcur[k], ga[k], gres[k]) }
/* the chained start of goroutine k's next job; the outcome it rides with
 * has been settled, so ga[k] is free for the next job's attempt */
inline startNextStmt(k) {
  SAY("P0.g%d chained ", k);
  t_j = gn[k] - 1; startRow(t_j, gncur[k], ga[k], gnres[k])
}
/* qTransition's complete list (and qComplete) */
inline completeStmt(k) {
  t_j = gj[k];
  fenceBegin(t_j, gcur[k]);
  if
#ifdef BROKEN_COMPLETE_NO_LEASE
  :: inHot[t_j] && st[t_j] == PROC ->
#else
  :: RUNNING(t_j, gcur[k]) ->
#endif
     toArchive(t_j); out[t_j] = 1; gres[k] = RES_OK; SAY("Complete(job %d): Processing -> JobsArchive, with its output\n", t_j)
  :: else ->
#ifdef BROKEN_OUTPUT_UNFENCED
     out[t_j] = 1;
#endif
     gres[k] = RES_LOST; SAY("Complete(job %d): lease lost, nothing changed\n", t_j)
  fi;
  fenceEnd(t_j)
}
/* qTransition's dead-letter list (and qDeadLetter) */
inline deadLetterStmt(k) {
  t_j = gj[k];
  fenceBegin(t_j, gcur[k]);
  if
  :: RUNNING(t_j, gcur[k]) -> toDLQ(t_j); gres[k] = RES_OK; SAY("DeadLetter(job %d): Processing -> JobsDLQ\n", t_j)
  :: else -> gres[k] = RES_LOST; SAY("DeadLetter(job %d): lease lost, nothing changed\n", t_j)
  fi;
  fenceEnd(t_j)
}
/* the statement that writes goroutine k's transition */
inline writeStmt(k) {
  SAY("P%d.g%d ", PW(k), k);
  if
  :: gk[k] == K_START -> startStmt(k)
  :: gk[k] == K_COMPLETE -> completeStmt(k)
  :: gk[k] == K_RETRY || gk[k] == K_RETRY0 -> retryStmt(gj[k], gcur[k], gk[k] == K_RETRY0, gres[k])
  :: gk[k] == K_DL -> deadLetterStmt(k)
  fi
}
/* qSnooze */
inline snoozeStmt(k) {
  t_j = gj[k];
  fenceBegin(t_j, gcur[k]);
  SAY("P%d.g%d ", PW(k), k);
  if
  :: RUNNING(t_j, gcur[k]) && cr[t_j] -> toDLQ(t_j);
     SAY("Snooze(job %d): cancel requested, so DLQ as Cancelled\n", t_j)
  :: RUNNING(t_j, gcur[k]) && !cr[t_j] ->
     toPending(t_j, 1); att[t_j] = att[t_j] - 1; snz[t_j] = snz[t_j] + 1;
     SAY("Snooze(job %d): Processing -> Pending, the attempt given back\n", t_j)
  :: else -> SAY("Snooze(job %d): lease lost, nothing changed\n", t_j)
  fi;
  fenceEnd(t_j)
}
/* qHeartbeat for one ref, and what the heartbeater does with the answer.
 * A beat whose start is still unanswered (G_START) that finds no
 * Processing row is not a loss: the job is still Fetched, or the start's
 * own answer will say the lease is gone; it beats on (no step). */
#define BEAT_DUE(k)   (greg[k] && ((RUNNING(gj[k], gcur[k]) && ageH[gj[k]] >= HBMAX) || \
                       (!RUNNING(gj[k], gcur[k]) && gph[k] != G_START)))
inline beat(k) {
  t_j = gj[k];
  fenceBegin(t_j, gcur[k]);
  if
  :: RUNNING(t_j, gcur[k]) ->
     ageH[t_j] = 0;
     if
     :: cr[t_j] && !gcan[k] && gph[k] == G_RUN ->
        gcan[k] = 1;
        if
        :: gc[k] == C_NONE -> gc[k] = C_CANCEL
        :: else -> skip
        fi;
        SAY("P%d.g%d Heartbeat(job %d): stamped; cancel requested: handler cancelled (ErrCancelled)\n", PW(k), k, t_j)
     :: else -> SAY("P%d.g%d Heartbeat(job %d): stamped\n", PW(k), k, t_j)
     fi
  :: else ->
     if
     :: gph[k] == G_RUN && gc[k] == C_NONE -> gc[k] = C_LOST;
        SAY("P%d.g%d Heartbeat(job %d): lost; handler cancelled (lease lost)\n", PW(k), k, t_j)
     :: else ->                            /* finishing: the outcome's write decides */
        SAY("P%d.g%d Heartbeat(job %d): lost; beat dropped\n", PW(k), k, t_j)
     fi;
     greg[k] = 0
  fi;
  fenceEnd(t_j)
}

/* the chained start's job is beaten from when the worker takes it: a
 * start whose reply is lost may have committed */
#ifdef BROKEN_CHAIN_UNBEATEN
#define NEXT_BEAT 0
#else
#define NEXT_BEAT 1
#endif
/* a Processing job's beat, for the next job's */
inline beatNext(k) {
  t_j = gn[k] - 1;
  fenceBegin(t_j, gncur[k]);
  ageH[t_j] = 0;
  SAY("P0.g%d Heartbeat(job %d, its chained start unanswered): stamped\n", k, t_j);
  fenceEnd(t_j)
}

/* ---- processor ---- */
inline clearG(k) {
  gph[k] = G_IDLE; gj[k] = 0; gcur[k] = 0; ga[k] = 0; gs[k] = 0; gc[k] = C_NONE;
  gk[k] = 0; gq[k] = Q_NONE; gres[k] = 0; greg[k] = 0; gcan[k] = 0;
  gn[k] = 0; gncur[k] = 0; gns[k] = 0; gnres[k] = 0; gnreg[k] = 0
}
/* the worker takes the buffered job; its beat is registered before the
 * start goes out (processor.prepare) */
inline pop(k, w) {
  gj[k] = bj[w] - 1; gcur[k] = bcur[w]; gs[k] = bs[w]; bj[w] = 0; bcur[w] = 0; bs[w] = 0;
  gph[k] = G_START; gk[k] = K_START; greg[k] = 1
}
/* processor.next: the buffered job rides, as a start, with the outcome */
inline takeNext(k, w) {
  gn[k] = bj[w]; gncur[k] = bcur[w]; gns[k] = bs[w]; bj[w] = 0; bcur[w] = 0; bs[w] = 0;
  gnreg[k] = NEXT_BEAT;
  SAY("P%d.g%d takes job %d; its start rides with the outcome of job %d\n", w, k, gn[k] - 1, gj[k])
}
/* the next job's start was confirmed with the outcome: its handler runs */
inline promote(k) {
  gj[k] = gn[k] - 1; gcur[k] = gncur[k]; gs[k] = gns[k];
  gph[k] = G_RUN; greg[k] = 1; gk[k] = 0; gcan[k] = 0;
  gc[k] = (stopping[PW(k)] -> C_SHUT : C_NONE);
  gn[k] = 0; gncur[k] = 0; gns[k] = 0; gnres[k] = 0; gnreg[k] = 0;
  SAY("P%d.g%d handler of job %d runs, beaten by the heartbeater\n", PW(k), k, gj[k])
}
/* what a worker does with its call's answer */
inline answer(k) {
  if
  :: gres[k] == RES_CALLFAIL ->          /* stays where it is, beaten, and sends it again */
     gnres[k] = 0;
     SAY("P%d.g%d no reply for job %d; write() sends it again\n", PW(k), k, gj[k])
  :: gk[k] == K_START && gres[k] == RES_OK ->
     gph[k] = G_RUN; greg[k] = 1; gk[k] = 0;
     gc[k] = (stopping[PW(k)] -> C_SHUT : C_NONE);
     SAY("P%d.g%d handler of job %d runs, beaten by the heartbeater\n", PW(k), k, gj[k])
  :: gk[k] == K_START && gres[k] == RES_LOST -> clearG(k)           /* lease lost before start */
  :: gk[k] != K_START && gres[k] != RES_CALLFAIL ->
     if
     :: gn[k] != 0 && gnres[k] == RES_OK -> promote(k)
     :: else -> clearG(k)                                          /* no next, or its start refused */
     fi
  fi;
  gq[k] = Q_NONE; gres[k] = 0
}
/* processor.settle: the first row of docs/design.md (Outcomes) that applies */
inline outcome(k, kind) { gph[k] = G_OUT; gk[k] = kind }
inline settle(k, r) {
  SAY("P%d.g%d handler of job %d returns ", PW(k), k, gj[k]);
  if
  :: r == R_NIL -> SAY("nil")
  :: r == R_ERR -> SAY("an error")
  :: r == R_SNOOZE -> SAY("Snooze(d)")
  fi;
  if
  :: gc[k] == C_LOST -> SAY(", its context cancelled: lease lost\n")
  :: gc[k] == C_CANCEL -> SAY(", its context cancelled: ErrCancelled\n")
  :: gc[k] == C_SHUT -> SAY(", its context cancelled: shutdown\n")
  :: gc[k] == C_NONE -> SAY("\n")
  fi;
  if
  :: gc[k] == C_LOST -> clearG(k)                         /* writes nothing */
  :: gc[k] != C_LOST && r == R_NIL -> outcome(k, K_COMPLETE)
#ifdef BROKEN_RELEASE_BEFORE_COMMIT
     ; if
     :: wf && gj[k] == 0 && inHot[1] && st[1] == WPAR -> SAY("(broken) complete begins: ");
        st[1] = PEND; due[1] = 1; SAY("job 1 released before the move commits\n")
     :: else -> skip
     fi
#endif
  :: gc[k] == C_CANCEL && r != R_NIL -> outcome(k, K_DL)
  :: (gc[k] == C_NONE || gc[k] == C_SHUT) && r == R_SNOOZE ->
     if
     :: gs[k] >= maxsnz -> outcome(k, K_DL)                /* SnoozeLimitExceeded */
     :: else -> gph[k] = G_SNOOZE
     fi
  :: gc[k] == C_SHUT && r == R_ERR -> outcome(k, K_RETRY0)
  :: gc[k] == C_NONE && r == R_ERR ->
     if
     :: ga[k] >= maxatt -> outcome(k, K_DL)                /* MaxRetriesExceeded */
     :: else -> outcome(k, K_RETRY)
     fi
  fi
}
/* A process that freezes or dies stops beating: its jobs are no longer kept. */
inline unkeep(w) {
  t_k = 0;
  do
  :: t_k < NK ->
     if
     :: PW(t_k) == w && gph[t_k] != G_IDLE && RUNNING(gj[t_k], gcur[t_k]) -> kept[gj[t_k]] = 0
     :: else -> skip
     fi;
     if
     :: PW(t_k) == w && gn[t_k] != 0 && RUNNING(gn[t_k] - 1, gncur[t_k]) -> kept[gn[t_k] - 1] = 0
     :: else -> skip
     fi;
     t_k++
  :: else -> break
  od;
  skip
}
inline killProc(w) {
  unkeep(w);
  dead[w] = 1; frozen[w] = 0; bj[w] = 0; bcur[w] = 0; bs[w] = 0; fl[w] = 0; KSEEN0(w);
  if
  :: w == 0 -> clearG(0); clearG(1); bstage = 0
  :: else -> clearG(2)
  fi
#ifdef BROKEN_COUNT_OUTSIDE_LOCK
  ; seen[w] = 0
#endif
}

/* ---- processes ---- */

/* The fetch loop (processor.fetchLoop) and the store's Claim, which a
 * lost reply makes retry: it adopts the rows its ClaimId stamped, else
 * claims again. */
#define CLAIM_OPTIONS(J) \
  :: d_step { FREE_TO_CLAIM(w) && CLAIMABLE(w, J) -> claimRow(w, J); deliver(w, J); \
       SAY("P%d Claim: job %d (queue %d) Fetched under a new lease, buffered\n", w, J, qof[J]) } \
  :: d_step { FREE_TO_CLAIM(w) && CLAIMABLE(w, J) && lossB > 0 -> \
       lossB--; claimRow(w, J); cid[J] = w + 1; fl[w] = qof[J] + 1; \
       SAY("P%d Claim: job %d Fetched under its ClaimId; the reply is lost\n", w, J) } \
  :: d_step { FREE_TO_CLAIM(w) && CLAIMABLE(w, J) && lossB > 0 -> \
       lossB--; fl[w] = qof[J] + 1; late[w] = qof[J] + 1; \
       SAY("P%d Claim of queue %d: no reply; the attempt is held up on its way\n", w, qof[J]) } \
  :: d_step { fetches && ALIVE(w) && fl[w] != 0 && ADOPTABLE(w, J) -> deliver(w, J); cid[J] = 0; fl[w] = 0; \
       SAY("P%d Claim, retried: adopts job %d, Fetched by this worker\n", w, J) } \
  :: d_step { fetches && ALIVE(w) && fl[w] != 0 && !ADOPTABLE(w, 0) && !ADOPTABLE(w, 1) && \
       qof[J] == fl[w] - 1 && CLAIMABLE(w, J) -> claimRow(w, J); deliver(w, J); fl[w] = 0; \
       SAY("P%d Claim, retried: nothing to adopt; job %d Fetched under a new lease\n", w, J) } \
  :: d_step { fetches && late[w] != 0 && fl[w] == 0 && qof[J] == late[w] - 1 && CLAIMABLE(w, J) -> \
       claimRow(w, J); late[w] = 0; \
       SAY("P%d's held-up claim attempt runs now: job %d Fetched, held by nobody\n", w, J) }

/* Flow control (scenario 10): a claim that pops job J where the key or the
 * sequence does not allow it parks J (Status Waiting) instead, under the
 * same lock, and unparks what has room; a claim with no candidate still
 * unparks (a job whose reason went away is not stranded). */
#ifdef BROKEN_UNPARK_ON_CANDIDATES_ONLY
#define UNPARK_OPTION
#else
#define UNPARK_OPTION \
  :: d_step { FREE_TO_CLAIM(w) && (UNPARKABLE(0) || UNPARKABLE(1)) -> KSEEN0(w); unparkAll() }
#endif
#define PARK_OPTIONS(J) \
  :: d_step { FREE_TO_CLAIM(w) && fkind != 0 && DUEPEND(J) && FLOWBAD(w, J) -> \
       KSEEN0(w); unparkAll(); st[J] = WAIT; pk[J] = 1; \
       SAY("P%d Claim: job %d parked (Waiting)\n", w, J) }
#ifdef BROKEN_KEY_COUNT_OUTSIDE_LOCK
#define KCOUNT_OPTION \
  :: d_step { FREE_TO_CLAIM(w) && fkind == F_KEY && kseen[w] == 0 && (DUEPEND(0) || DUEPEND(1)) -> \
       kseen[w] = KACT(0) + KACT(1) + 1; SAY("P%d counts the key's active jobs: %d\n", w, kseen[w] - 1) }
#else
#define KCOUNT_OPTION
#endif

#ifdef BROKEN_COUNT_OUTSIDE_LOCK
#define COUNT_OPTION \
  :: d_step { FREE_TO_CLAIM(w) && seen[w] == 0 && ((DUEPEND(0) && qof[0] == 0) || (DUEPEND(1) && qof[1] == 0)) -> \
       seen[w] = ACTIVE(0) + 1; SAY("P%d counts queue 0's active jobs: %d\n", w, seen[w] - 1) }
#else
#define COUNT_OPTION
#endif

/* A processor process's worker goroutine k (processor.worker, execute,
 * settle, write) with the heartbeater's beats of the job it runs, and,
 * if fetches, the process's fetch loop. A goroutine of the batched
 * process hands its start and outcome to the Batcher; any other makes the
 * one-job call itself, which is what a batch of one is. */
proctype Worker(byte w; byte k; bit fetches) {
end:
  do
  /* the fetch loop */
  CLAIM_OPTIONS(0)
  CLAIM_OPTIONS(1)
  :: d_step { fetches && ALIVE(w) && fl[w] != 0 && !ADOPTABLE(w, 0) && !ADOPTABLE(w, 1) &&
       !(qof[0] == fl[w] - 1 && CLAIMABLE(w, 0)) && !(qof[1] == fl[w] - 1 && CLAIMABLE(w, 1)) ->
       fl[w] = 0; SAY("P%d Claim, retried: nothing to adopt or claim\n", w) }
  :: d_step { fetches && late[w] != 0 && fl[w] == 0 -> late[w] = 0;
       SAY("P%d's held-up claim attempt never runs\n", w) }
  /* Scenario 12: a claim that knows a release is owed runs a release step
   * first (Store.ClaimHeld, releaseTasks); the claim is the next step. */
  :: d_step { FREE_TO_CLAIM(w) && ow -> releaseStep(w) }
  COUNT_OPTION
  PARK_OPTIONS(0)
  PARK_OPTIONS(1)
  UNPARK_OPTION
  KCOUNT_OPTION
  /* An idle poll probes (jobs.Prober, ADR 0027); a probe that sees work is
   * followed by the claim above, so it is the claim's step. One that
   * misses a due job makes the loop wait for its next poll, which asks
   * again: a lost wake-up delays a job, never loses it. */
  :: d_step { FREE_TO_CLAIM(w) && missB > 0 && (DUEPEND(0) || DUEPEND(1)) -> missB--; wt[w] = 1;
       SAY("P%d probe: misses the due job; waits for the next poll\n", w) }
#ifndef BROKEN_WAIT_FOR_WAKEUP
  :: d_step { fetches && ALIVE(w) && wt[w] != 0 -> wt[w] = 0; SAY("P%d's next poll\n", w) }
#endif
  :: d_step { fetches && ALIVE(w) && bj[w] != 0 &&
       (!LIVE(bj[w] - 1, bcur[w]) || (ageU[bj[w] - 1] >= RA && staleB > 0)) ->
       t_j = bj[w] - 1;
       if
       :: LIVE(t_j, bcur[w]) -> staleB--
       :: else -> skip
       fi;
       SAY("P%d releaseStale: ", w);
       releaseStmt(t_j, bcur[w], t_n); bj[w] = 0; bcur[w] = 0; bs[w] = 0 }

  /* the worker goroutine */
  :: d_step { ALIVE(w) && !stopping[w] && gph[k] == G_IDLE && bj[w] != 0 && BATCHED(k) ->
       pop(k, w); gq[k] = Q_QUEUED; SAY("P%d.g%d takes job %d; its start goes to the batcher\n", w, k, gj[k]) }
  :: d_step { ALIVE(w) && !stopping[w] && gph[k] == G_IDLE && bj[w] != 0 && !BATCHED(k) ->
       pop(k, w); writeStmt(k); answer(k) }
  :: d_step { ALIVE(w) && !stopping[w] && gph[k] == G_IDLE && bj[w] != 0 && !BATCHED(k) && lossB > 0 ->
       lossB--; pop(k, w); writeStmt(k); gres[k] = RES_CALLFAIL; answer(k) }     /* it ran; the reply is lost */
  :: d_step { ALIVE(w) && !stopping[w] && gph[k] == G_IDLE && bj[w] != 0 && !BATCHED(k) && lossB > 0 ->
       lossB--; pop(k, w); gres[k] = RES_CALLFAIL; answer(k) }                   /* it never ran */
  :: d_step { ALIVE(w) && gph[k] == G_RUN -> settle(k, R_NIL) }
  :: d_step { ALIVE(w) && gph[k] == G_RUN -> settle(k, R_ERR) }
  :: d_step { ALIVE(w) && gph[k] == G_RUN -> settle(k, R_SNOOZE) }
  :: d_step { ALIVE(w) && gph[k] == G_START && gq[k] == Q_NONE && BATCHED(k) -> gq[k] = Q_QUEUED }  /* sent again */
  :: d_step { ALIVE(w) && gph[k] == G_START && !BATCHED(k) -> writeStmt(k); answer(k) }     /* sent again */
  :: d_step { ALIVE(w) && gph[k] == G_OUT && gq[k] == Q_NONE && BATCHED(k) -> gq[k] = Q_QUEUED }
  :: d_step { ALIVE(w) && !stopping[w] && gph[k] == G_OUT && gq[k] == Q_NONE && BATCHED(k) && gn[k] == 0 && bj[w] != 0 ->
       takeNext(k, w); gq[k] = Q_QUEUED }
  :: d_step { ALIVE(w) && gnreg[k] && gn[k] != 0 && RUNNING(gn[k] - 1, gncur[k]) && ageH[gn[k] - 1] >= HBMAX -> beatNext(k) }
  :: d_step { ALIVE(w) && gph[k] == G_OUT && !BATCHED(k) -> writeStmt(k); answer(k) }
  :: d_step { ALIVE(w) && gph[k] == G_OUT && !BATCHED(k) && lossB > 0 ->
       lossB--; writeStmt(k); gres[k] = RES_CALLFAIL; answer(k) }               /* the reply is lost: sent again */
  :: d_step { ALIVE(w) && gph[k] == G_SNOOZE -> snoozeStmt(k); clearG(k) }
  :: d_step { ALIVE(w) && gph[k] == G_SNOOZE && lossB > 0 -> lossB--; snoozeStmt(k);
       SAY("P%d.g%d the snooze's reply is lost: sent again\n", w, k) }
  :: d_step { ALIVE(w) && BEAT_DUE(k) -> beat(k) }
  od
}

/* Process 0's batcher (processor/batcher.go, ADR 0018): one Transition
 * carries what its goroutines queued; its lists run as statements of
 * their own, in list order, and each worker reads its own answer when
 * none is left. */
#define LISTOF(kind)  ((kind) == K_START -> 1 : ((kind) == K_COMPLETE -> 2 : ((kind) == K_DL -> 4 : 3)))
#define OWNLIST(k, s) (gq[k] == Q_INFL && LISTOF(gk[k]) == (s))
#define NEXTLIST(k, s) (gq[k] == Q_INFL && (s) == 1 && gn[k] != 0)     /* a chained start */
#define INLIST(k, s)  (OWNLIST(k, s) || NEXTLIST(k, s))
inline nextStage(s) {
  t_s = s;
  do
  :: t_s <= 4 && !INLIST(0, t_s) && !INLIST(1, t_s) -> t_s++
  :: else -> break
  od;
  bstage = t_s
}
inline runList() {
  t_s = bstage;
  if
  :: NEXTLIST(0, t_s) -> startNextStmt(0)
  :: else -> skip
  fi;
  if
  :: NEXTLIST(1, t_s) -> startNextStmt(1)
  :: else -> skip
  fi;
  if
  :: OWNLIST(0, t_s) -> writeStmt(0)
  :: else -> skip
  fi;
  if
  :: OWNLIST(1, t_s) -> writeStmt(1)
  :: else -> skip
  fi;
  nextStage(t_s + 1)
}
inline sendCall() {
  if
  :: gq[0] == Q_QUEUED -> gq[0] = Q_INFL
  :: else -> skip
  fi;
  if
  :: gq[1] == Q_QUEUED -> gq[1] = Q_INFL
  :: else -> skip
  fi;
  SAY("P0 batcher: Transition with %d requests\n", (gq[0] == Q_INFL) + (gq[1] == Q_INFL));
  nextStage(1)
}
inline answerCall(lost) {
  if
  :: lost -> SAY("P0 batcher: the Transition's reply is lost; every request fails\n")
  :: else -> skip
  fi;
  if
  :: gq[0] == Q_INFL ->
     if
     :: lost -> gres[0] = RES_CALLFAIL
     :: else -> skip
     fi;
     answer(0)
  :: else -> skip
  fi;
  if
  :: gq[1] == Q_INFL ->
     if
     :: lost -> gres[1] = RES_CALLFAIL
     :: else -> skip
     fi;
     answer(1)
  :: else -> skip
  fi;
  bstage = 0
}
#define CALL_READY    (ALIVE(0) && bstage == 0 && (gq[0] == Q_QUEUED || gq[1] == Q_QUEUED))
proctype Batcher() {
end:
  do
  :: d_step { CALL_READY -> sendCall(); runList();
       if
       :: bstage == 5 -> answerCall(0)
       :: else -> skip
       fi }
  :: d_step { ALIVE(0) && bstage >= 1 && bstage <= 4 -> runList();
       if
       :: bstage == 5 -> answerCall(0)
       :: else -> skip
       fi }
  :: d_step { CALL_READY && lossB > 0 -> lossB--; sendCall();         /* it all ran */
       do
       :: bstage <= 4 -> runList()
       :: else -> break
       od;
       answerCall(1) }
  :: d_step { CALL_READY && lossB > 0 -> lossB--; sendCall(); answerCall(1) }                   /* none of it ran */
  :: d_step { ALIVE(0) && bstage >= 1 && bstage <= 4 && lossB > 0 -> lossB--; answerCall(1) }  /* part of it ran */
  od
}

/* The rescue loop (zombie.Rescuer.Sweep). Every process runs one, so the
 * phases of several sweeps interleave: each step is one phase's statement
 * moving one row. */
#ifdef BROKEN_PHASE1_BUMPS_ATTEMPT
#define PHASE1_ATTEMPT(J) att[J] = att[J] + 1;
#else
#define PHASE1_ATTEMPT(J)
#endif
#ifdef BROKEN_RELEASE_LOST_ON_RESCUE
#define RESCUE_DLQ(J) dlqRow(J)     /* the child's policy not applied */
#else
#define RESCUE_DLQ(J) toDLQ(J)
#endif
#ifdef BROKEN_ZOMBIE_TO_PENDING
#define PHASE2_MOVE(J) toPending(J, 0); due[J] = 1
#else
#define PHASE2_MOVE(J) RESCUE_DLQ(J)
#endif
/* Phase 2 under a kind's zombie policy (ADR 0029): the job goes back to
 * Pending, its attempt spent, its lease left as it was (the next claim
 * bumps it); a frozen holder's ref still matches RunLease but no longer
 * the status. */
#define RECOVER(J) toPending(J, 2); due[J] = 1; zused[J] = zused[J] + 1
#ifdef BROKEN_RECOVER_WHILE_BEATING
#define BROKEN_RECOVERY(J) \
  :: d_step { inHot[J] && st[J] == PROC && RECOVERS(J) && ageS[J] > 0 -> RECOVER(J); \
       SAY("RescueZombies (broken): job %d recovered without waiting for its silence\n", J) }
#else
#define BROKEN_RECOVERY(J)
#endif
#define RESCUE_OPTIONS(J) \
  :: d_step { inHot[J] && st[J] == FETCH && ageU[J] > FT -> PHASE1_ATTEMPT(J) toPending(J, 0); due[J] = 1; \
       SAY("RescueFetched (phase 1): job %d Fetched -> Pending\n", J) } \
  :: d_step { inHot[J] && st[J] == PROC && ageH[J] > ZEFF(qof[J]) -> \
       if \
       :: kept[J] -> badI3b = 1 \
       :: else -> skip \
       fi; \
       if \
       :: RECOVERS(J) -> RECOVER(J); SAY("RescueZombies (phase 2): job %d, heartbeat expired, recovered to Pending\n", J) \
       :: else -> PHASE2_MOVE(J); SAY("RescueZombies (phase 2): job %d, heartbeat expired, moved\n", J) \
       fi } \
  BROKEN_RECOVERY(J) \
  :: d_step { inHot[J] && st[J] == PROC && ageS[J] > ET(qof[J]) -> RESCUE_DLQ(J); \
       SAY("RescueExpired (phase 3): job %d past its deadline -> JobsDLQ\n", J) }

/* What happens to processes (crash, freeze, resume, Stop) and what
 * operators do to jobs (Cancel, Resurrect). */
#define PROC_OPTIONS(W) \
  :: d_step { !dead[W] && leaveB > 0 -> leaveB--; killProc(W); SAY("P%d crashes\n", W) } \
  :: d_step { !dead[W] && !frozen[W] && freezeB > 0 -> freezeB--; frozen[W] = 1; unkeep(W); \
       SAY("P%d freezes\n", W) } \
  :: d_step { frozen[W] -> frozen[W] = 0; SAY("P%d resumes\n", W) } \
  :: d_step { ALIVE(W) && !stopping[W] && leaveB > 0 -> \
       leaveB--; stopping[W] = 1; fl[W] = 0; SAY("P%d Stop: claims end, buffer released, handlers cancelled\n", W); \
       if \
       :: bj[W] != 0 -> releaseStmt(bj[W] - 1, bcur[W], t_n); bj[W] = 0; bcur[W] = 0; bs[W] = 0 \
       :: else -> skip \
       fi; \
       t_k = 0; \
       do \
       :: t_k < NK -> \
          if \
          :: PW(t_k) == W && gph[t_k] == G_RUN && gc[t_k] == C_NONE -> gc[t_k] = C_SHUT \
          :: else -> skip \
          fi; \
          t_k++ \
       :: else -> break \
       od; \
       skip } \
  :: d_step { ALIVE(W) && stopping[W] -> killProc(W); SAY("P%d Stop returns; what is left goes to rescue\n", W) }

/* Unique keys (scenario 9). Enqueue of job n with the key: under the
 * key's exclusive lock, held to commit, it reads the row; if the job the
 * row points at holds the key, it returns that job as the duplicate and
 * creates nothing, else it inserts n Pending and points the row at n (an
 * insert, or an update of a row left behind): one transaction, one step. */
inline createJob(j) {
  born[j] = 1; inHot[j] = 1; clearHot(j); due[j] = 1; att[j] = 0; snz[j] = 0; zused[j] = 0; out[j] = 0;
  hasKey[j] = 1; krow = j + 1; enq[j] = E_MADE;
  SAY("Enqueue(job %d): created Pending, the key's row points at it\n", j)
}
inline refuseJob(j) {
  if
  :: !KHELD -> badIU = 1        /* it must name a job that holds the key */
  :: else -> skip
  fi;
  enq[j] = E_DUP;
  SAY("Enqueue(job %d): duplicate of job %d, which holds the key; nothing created\n", j, krow - 1)
}
#ifdef BROKEN_UNIQUE_NO_LOCK
#define ENQ_OPTIONS(J) \
  :: d_step { enq[J] == E_WANT -> \
       if \
       :: KHELD -> refuseJob(J) \
       :: else -> enq[J] = E_READ; SAY("Enqueue(job %d), no key lock: reads no holder\n", J) \
       fi } \
  :: d_step { enq[J] == E_READ -> createJob(J) }
#else
#define ENQ_OPTIONS(J) \
  :: d_step { enq[J] == E_WANT -> \
       if \
       :: KHELD -> refuseJob(J) \
       :: else -> createJob(J) \
       fi }
#endif
/* Resurrect of a dead letter j with the key, under the same lock: j takes
 * the key back if no job holds it (no row, the row is j's, or its job no
 * longer holds it), else j's key is dropped and it goes on without one. */
inline retakeKey(j) {
  if
  :: !hasKey[j] -> skip
#ifdef BROKEN_RESURRECT_KEEPS_KEY
  :: hasKey[j] -> SAY("Resurrect(job %d), broken: keeps its key, the row unread\n", j)
#else
  :: hasKey[j] && (krow == j + 1 || !KHELD) -> krow = j + 1; SAY("Resurrect(job %d): takes its key back\n", j)
  :: hasKey[j] && krow != j + 1 && KHELD -> hasKey[j] = 0; SAY("Resurrect(job %d): job %d holds the key; the key is dropped\n", j, krow - 1)
#endif
  fi
}
/* Trim (retention) or purge of a finished job: its row goes, and the key's
 * row with it if it points at the job; a trim that skips a locked key row
 * (READPAST) leaves that row pointing at a job that is gone. */
#define TRIM_OPTIONS(J) \
  :: d_step { trimB > 0 && (inArch[J] || inDlq[J]) -> trimB--; wfGone(J); \
       inArch[J] = 0; inDlq[J] = 0; dlc[J] = 0; born[J] = 0; out[J] = 0; att[J] = 0; snz[J] = 0; hasKey[J] = 0; \
       if \
       :: krow == J + 1 -> krow = 0 \
       :: else -> skip \
       fi; \
       SAY("Trim(job %d): deleted, with its key row\n", J) } \
  :: d_step { trimB > 0 && (inArch[J] || inDlq[J]) && krow == J + 1 -> trimB--; \
       inArch[J] = 0; inDlq[J] = 0; dlc[J] = 0; born[J] = 0; out[J] = 0; att[J] = 0; snz[J] = 0; hasKey[J] = 0; \
       SAY("Trim(job %d): deleted; its key row, locked, skipped: it points at a gone job\n", J) }

#define JOB_OPTIONS(J) \
  :: d_step { cancelB > 0 && inHot[J] && !(st[J] == PROC && cr[J]) -> \
       cancelB--; \
       if \
       :: st[J] == PROC -> cr[J] = 1; SAY("Cancel(job %d): Processing, marked\n", J) \
       :: else -> cr[J] = 1; toDLQ(J); SAY("Cancel(job %d): -> JobsDLQ as Cancelled\n", J) \
       fi } \
  :: d_step { resB > 0 && inDlq[J] -> \
       resB--; retakeKey(J); dlc[J] = 0; inDlq[J] = 0; inHot[J] = 1; clearHot(J); att[J] = 0; snz[J] = 0; zused[J] = 0; due[J] = 1; \
       SAY("Resurrect(job %d): JobsDLQ -> Pending, RunLease kept\n", J); wfResurrect(J) }

/* The rescue loops, and what happens to processes and jobs from outside */
proctype Ops() {
end:
  do
  RESCUE_OPTIONS(0)
  RESCUE_OPTIONS(1)
  PROC_OPTIONS(0)
  PROC_OPTIONS(1)
  JOB_OPTIONS(0)
  JOB_OPTIONS(1)
  ENQ_OPTIONS(0)
  ENQ_OPTIONS(1)
  TRIM_OPTIONS(0)
  TRIM_OPTIONS(1)
#ifdef BROKEN_SPLIT_MOVE
  :: d_step { limbo[0] -> limbo[0] = 0; inArch[0] = 1; SAY("job 0 inserted into JobsArchive\n") }
  :: d_step { limbo[1] -> limbo[1] = 0; inArch[1] = 1; SAY("job 1 inserted into JobsArchive\n") }
#endif
  od
}

/* The store's clock, SYSUTCDATETIME(): a tick ages every row. init runs
 * it once the other processes are started. */
inline clockLoop() {
end:
  do
  :: d_step { !TIME_BLOCKED ->
       t_j = 0;
       do
       :: t_j < NJ ->
          if
          :: inHot[t_j] && st[t_j] == PEND -> due[t_j] = 1
          :: inHot[t_j] && st[t_j] == FETCH && ageU[t_j] < CAPU -> ageU[t_j]++
          :: inHot[t_j] && st[t_j] == PROC ->
             if
             :: ageH[t_j] < CAPH -> ageH[t_j]++
             :: else -> skip
             fi;
             if
             :: ageS[t_j] < CAPS -> ageS[t_j]++
             :: else -> skip
             fi
          :: else -> skip
          fi;
          t_j++
       :: else -> break
       od;
       SAY("tick\n") }
  :: timeout -> assert(false)   /* a timelock: the clock waits for a step no process can take */
  od
}

init {
  atomic {
    if
    :: QSPLIT != 1 -> qof[1] = 0    /* both jobs behind queue 0's MaxWorkers */
    :: QSPLIT != 0 -> qof[1] = 1    /* job 1 in queue 1, under its own timeouts */
    fi;
    if
#if SCENARIO == 0 || SCENARIO == 1
    :: freezeB = 1; resB = 1                  /* 1 stale: a worker freezes, a job is resurrected */
#endif
#if SCENARIO == 0 || SCENARIO == 2
    :: lossB = 1; staleB = 1                  /* 2 replies: a reply lost, a buffered job released */
#endif
#if SCENARIO == 0 || SCENARIO == 3
    :: leaveB = 1; cancelB = 1                /* 3 stop: a crash or a Stop, a cancel */
#endif
#if SCENARIO == 0 || SCENARIO == 4
    :: maxatt = 2; maxsnz = 1                 /* 4 retry: a retry after backoff, a snooze */
#endif
#if SCENARIO == 0 || SCENARIO == 5
    :: cancelB = 1; maxsnz = 1                /* 5 cancel: a cancel meets a running job or a snooze */
#endif
#if SCENARIO == 0 || SCENARIO == 6
    :: group = 1; lossB = 1                   /* 6 group commit, a reply lost */
#endif
#if SCENARIO == 0 || SCENARIO == 7
    :: missB = 2                              /* 7 wake-ups: each process's probe may miss a due job */
#endif
#if SCENARIO == 0 || SCENARIO == 8
    :: zpol[0] = 1; freezeB = 1; resB = 1     /* 8 zombie retry: job 0's kind opts in, a worker freezes */
#endif
#if SCENARIO == 0 || SCENARIO == 9
    :: born[0] = 0; born[1] = 0; inHot[0] = 0; inHot[1] = 0; due[0] = 0; due[1] = 0;
       enq[0] = E_WANT; enq[1] = E_WANT; resB = 1; trimB = 1;   /* 9 unique: two enqueues race for one key */
       if
       :: karch = 1
       :: karch = 0
       fi;
       if
       :: kdlq = 1
       :: kdlq = 0
       fi
#endif
#if SCENARIO == 0 || SCENARIO == 10
    :: qof[0] = 1; qof[1] = 1; resB = 1; cancelB = 1;    /* 10 flow: one key or one sequence, uncapped queue */
       if
       :: fkind = F_KEY
       :: fkind = F_SEQ;
          if
          :: fhold = 0
          :: fhold = 1; trimB = 1     /* retention removes a held dead letter in the end */
          fi
       fi
#endif
#if SCENARIO == 0 || SCENARIO == 11
    :: qof[1] = 1; wf = 1; st[1] = WPAR; resB = 1;   /* 11 workflow: job 1 runs after job 0 */
       if
       :: cancelB = 1                 /* an operator's cancel, of either job */
       :: leaveB = 1                  /* a crash or a Stop: phase 2 takes a running parent */
       fi;
       if
       :: wpol = P_CANCEL
       :: wpol = P_ANY
       :: wpol = P_WAIT
       fi;
       SAY("workflow: job 1 waits for job 0, OnParentFailure %d (0 cancel, 1 run anyway, 2 wait)\n", wpol)
#endif
#if SCENARIO == 0 || SCENARIO == 12
    :: qof[1] = 1; wf = 1; sqlrel = 1; st[1] = WPAR; xst = X_WAIT; resB = 1;
       trimB = 1;                     /* a purge or trim of job 0 (a WorkflowGone row) */
       if                             /* 12 workflow, the SQL Server release: 11's faults */
       :: cancelB = 1
       :: leaveB = 1                  /* also a crash between two release steps */
       fi;
       if
       :: wpol = P_CANCEL
       :: wpol = P_ANY
       :: wpol = P_WAIT
       fi;
       SAY("workflow, SQL release: jobs X and 1 wait for job 0, OnParentFailure %d\n", wpol)
#endif
    fi;
    SAY("scenario: leave %d freeze %d loss %d stale %d cancel %d resurrect %d MaxAttempts %d MaxSnoozes %d group %d; job 1 in queue %d\n",
           leaveB, freezeB, lossB, staleB, cancelB, resB, maxatt, maxsnz, group, qof[1]);
    run Ops(); run Worker(0, 0, 1); run Worker(1, 2, 1);
    if
    :: group -> run Worker(0, 1, 0); run Batcher()
    :: else -> skip
    fi
  };
  clockLoop()
}

/* ---- properties ---- */
#define ONE_HOLDER(j) (!(inHot[j] && ACT(j)) || HOLDERS(j) <= 1)
#define ONE_TABLE(j)  (inHot[j] + inArch[j] + inDlq[j] == born[j])   /* an unborn or trimmed job: none */

/* I1: at most one holder of a job's current lease, and a statement under any other lease changes nothing */
ltl I1 { [] (ONE_HOLDER(0) && ONE_HOLDER(1) && !badI1) }
/* I2: every job is in exactly one table (a job not enqueued yet, refused or trimmed: in none) */
ltl I2 { [] (ONE_TABLE(0) && ONE_TABLE(1)) }
/* I3: release and phase 1 keep AttemptCount; a job kept beating is never dead-lettered as a zombie */
ltl I3 { [] (!badI3a && !badI3b) }
/* I4: only the lease holder's own retry or snooze takes a Processing job back to Pending, or
 * phase 2 for a job whose kind opted into zombie retries, below its cap, never while a live
 * holder of its lease beats it; it then runs again only under a new lease (I1's fence) */
ltl I4 { [] !badI4 }
/* I6: queue 0's Fetched plus Processing jobs never exceed its MaxWorkers */
ltl I6 { [] (ACTIVE(0) <= MAXW0) }
/* liveness, under weak fairness: the hot table empties again and again;
 * since only a resurrect (bounded) brings a job back, every job leaves it for good,
 * but for a workflow task under wait on a parent in the DLQ (IW2's exception), which
 * waits for an operator */
#define WFHELD (wf && inHot[1] && st[1] == WPAR && inDlq[0] && wpol == P_WAIT)
/* scenario 12: X leaves too (released, it would run as job 1 does, or
 * dead-lettered), but for IW2's exception; and every owed release is paid */
#define XLEFT  (xst != X_WAIT || (inDlq[0] && wpol == P_WAIT))
ltl L1 { [] <> (!inHot[0] && (!inHot[1] || WFHELD) && XLEFT && !ow) }
/* IU: every hot job that carries the unique key is the one its row points at (so never two), and
 * an enqueue refused as a duplicate named a job that held the key */
#define KEY_OK(j)     (!(inHot[j] && hasKey[j]) || krow == (j) + 1)
ltl IU { [] (KEY_OK(0) && KEY_OK(1) && !badIU) }

/* Witnesses: run_checks.sh expects each to be violated, which shows the
 * case is in the model and the properties above do not hold for want of it. */
#define OLD_BESIDE_NEW(a, b) (gph[a] == G_RUN && gph[b] == G_RUN && gj[a] == gj[b] && gcur[a] != gcur[b])
ltl W_stale_handler { [] !(OLD_BESIDE_NEW(0, 2) || OLD_BESIDE_NEW(1, 2) || OLD_BESIDE_NEW(0, 1)) }
#define RUN0(k) (gph[k] == G_RUN && qof[gj[k]] == 0)
ltl W_cap_handlers { [] (RUN0(0) + RUN0(1) + RUN0(2) <= MAXW0) }
ltl W_adoption { [] !((fl[0] != 0 && (ADOPTABLE(0, 0) || ADOPTABLE(0, 1))) || (fl[1] != 0 && (ADOPTABLE(1, 0) || ADOPTABLE(1, 1)))) }
/* a Fetched row nobody holds or will adopt, every process alive: only phase 1 returns it */
#define ORPHAN(j) (inHot[j] && st[j] == FETCH && HOLDERS(j) == 0 && fl[0] == 0 && fl[1] == 0 && \
                   !dead[0] && !dead[1] && !frozen[0] && !frozen[1])
ltl W_orphan_row { [] !(ORPHAN(0) || ORPHAN(1)) }
ltl W_group_commit { [] !(gq[0] == Q_INFL && gq[1] == Q_INFL && (gk[0] == K_START) != (gk[1] == K_START)) }
ltl W_cancel_running { [] !(gc[0] == C_CANCEL || gc[1] == C_CANCEL || gc[2] == C_CANCEL) }
ltl W_snooze { [] !(snz[0] > 0 || snz[1] > 0) }
ltl W_retry { [] !(inHot[0] && st[0] == PEND && att[0] > 0 && snz[0] == 0) }
/* a start committed whose reply was lost: the job Processing, beaten, its worker about to send the start again */
#define PSTARTED(k) (gph[k] == G_START && gq[k] == Q_NONE && RUNNING(gj[k], gcur[k]))
ltl W_start_reply_lost { [] !(PSTARTED(0) || PSTARTED(1) || PSTARTED(2)) }
/* one Transition carries a goroutine's outcome and the start of its next job */
ltl W_chain { [] !((gq[0] == Q_INFL && gn[0] != 0) || (gq[1] == Q_INFL && gn[1] != 0)) }
/* a chained start committed whose reply was lost: the next job Processing, beaten, the call about to go again */
#define NSTARTED(k) (gn[k] != 0 && gq[k] == Q_NONE && RUNNING(gn[k] - 1, gncur[k]))
ltl W_chain_reply_lost { [] !(NSTARTED(0) || NSTARTED(1)) }
ltl W_late_attempt { [] !((late[0] != 0 && fl[0] == 0) || (late[1] != 0 && fl[1] == 0)) }
ltl W_shutdown_retry { [] !(gk[0] == K_RETRY0 || gk[1] == K_RETRY0 || gk[2] == K_RETRY0) }
#define SNOOZE_MARKED(k) (gph[k] == G_SNOOZE && cr[gj[k]] && gcur[k])
/* a job recovered by phase 2 runs again, under a new lease, beside its frozen old holder */
#define RERUN(k) (gph[k] == G_RUN && gj[k] == 0 && gcur[k] && zused[0] > 0)
ltl W_zombie_retry { [] !(RERUN(0) || RERUN(1) || RERUN(2)) }
ltl W_snooze_meets_cancel { [] !(SNOOZE_MARKED(0) || SNOOZE_MARKED(1) || SNOOZE_MARKED(2)) }
/* an enqueue refused as a duplicate of the job holding the key */
ltl W_unique_dup { [] !(enq[0] == E_DUP || enq[1] == E_DUP) }
/* both enqueues created their job, and both jobs still have their rows: the second came after
 * the first had finished in a table the key does not count (not only after a trim) */
ltl W_unique_retake { [] !(enq[0] == E_MADE && enq[1] == E_MADE && born[0] && born[1]) }
/* a resurrected job found the key held by the other and goes on without it */
ltl W_unique_drop { [] !((born[0] && enq[0] == E_MADE && !hasKey[0]) || (born[1] && enq[1] == E_MADE && !hasKey[1])) }
/* I6K: never two jobs of one concurrency key (limit 1) Fetched or Processing at once */
ltl I6K { [] !(fkind == F_KEY && KACT(0) && KACT(1)) }
/* IS: a sequence member is claimed only while no member is Fetched or Processing and no earlier
 * member is unfinished, so none starts before every earlier one finished (an earlier one
 * resurrected after the claim waits for it) */
ltl IS { [] !badIS }
/* a job that was parked is running, unparked and claimed */
#define UNPARKED_RUN(k) (gph[k] == G_RUN && gcur[k] && pk[gj[k]])
ltl W_flow_unparked { [] !(UNPARKED_RUN(0) || UNPARKED_RUN(1) || UNPARKED_RUN(2)) }
/* an earlier sequence member, resurrected, waits parked while the later one runs */
ltl W_seq_wait { [] !(fkind == F_SEQ && inHot[0] && st[0] == WAIT && inHot[1] && st[1] == PROC) }
/* IW1: the task (job 1) leaves waiting for its parent (job 0), and is claimed, only once its
 * parent is archived, or dead-lettered under run-anyway (or it was resurrected, the parent not hot) */
ltl IW1 { [] !badIW1 }
/* IW2: the task never waits on a parent that is final (archived, in the DLQ, or gone), except
 * under wait with its parent in the DLQ: the parent's move releases it or applies its policy;
 * in scenario 12 the move leaves a debt instead, so a waiting child is not stranded while
 * the parent's owed mark stands with its cursor before the child's edge (a step will walk
 * it), and L1 says every debt is paid. In scenario 11 ow is never set and there is no X. */
#define WAITOK    (inDlq[0] && wpol == P_WAIT)
#define COVERED1  (ow && cur <= 1)
#define COVEREDX  (ow && cur == 0)
#define STRANDED  (wf && !inHot[0] && !WAITOK && \
                   ((inHot[1] && st[1] == WPAR && !COVERED1) || (xst == X_WAIT && !COVEREDX)))
ltl IW2 { [] !STRANDED }
/* the task, released by its parent's complete, runs */
#define WF_RUN(k) (wf && gph[k] == G_RUN && gj[k] == 1 && gcur[k] && inArch[0])
ltl W_wf_released { [] !(WF_RUN(0) || WF_RUN(1) || WF_RUN(2)) }
/* under wait, the task waits on its parent in the DLQ */
ltl W_wf_wait { [] !(wf && wpol == P_WAIT && inDlq[0] && inHot[1] && st[1] == WPAR) }
/* scenario 12: job 1 released by a release step that resumed from the cursor another
 * process's step left, that process crashed in between */
ltl W_wf_step_after_crash { [] !wfcrash }
