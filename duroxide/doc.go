// Package duroxide is the Go port of the provider-facing API of duroxide
// (github.com/microsoft/duroxide), following duroxide 0.1.30's contract: the
// history Event and its kinds, the WorkItem queue messages, the types a
// provider receives and returns, and the Provider and ProviderAdmin
// contracts. It has no storage and no runtime: providers (such as the
// Cosmos DB provider at the module root) implement it, and runtimes
// (duroxide/runtime) drive it.
//
// # Which duroxide
//
// The wire format and limits are 0.1.30's: parent_execution_id on
// StartOrchestration and OrchestrationStarted, the parent link on
// ContinueAsNew (all omitted when nil, so 0.1.26 JSON is unchanged and
// still read), 100 carry-forward events, 150 KV keys of at most 64 KiB. Of
// duroxide's main branch the port adopts the rules for races around
// continue-as-new and duplicate starts: a ContinueAsNew wins over any start
// in its batch; a duplicate start is inert, and a colliding parent call
// fails with "already exists"; inputs that arrive between an execution's
// ContinuedAsNew and its successor's start wait for the start (counted
// backoff, poisoned after MaxAttempts); stale completions of the old
// execution are dropped; a cancel reaches the successor; events round-trip
// exactly (a fetch never restamps); an instance poisoned after it continued
// as new is terminal (later inputs drained); the failure committed after a
// failed ack keeps the turn's collision notices; a terminal child ignores a
// redelivery of its own start; explicit child ids are used exactly as given
// but may not begin with "sub::", and detached ids obey the client's rule
// (tests/instance_id_validation_tests.rs). It also adopts main's
// stamp-dependent race cancellation, and so stamps events with main's
// version, "0.1.31" (DuroxideVersion).
//
// The race cancellation is chosen per execution by the duroxide_version of
// its OrchestrationStarted, for every turn and replay of it. An execution
// stamped 0.1.31 or newer (every execution this runtime starts) cancels a
// queue or positional wait whose future is dropped (a Select it lost, a
// Cancel) at that moment, or when it binds if it was dropped before; a
// positional event already matched to the dropped wait but never read is
// discarded with it; continue-as-new carries exactly the queue messages no
// wait read. An execution stamped older, or with an unreadable stamp
// (histories of 0.1.30 and before, the Rust runtime's "0.1.26" ones
// included), keeps the legacy rules it was recorded under: a dropped wait
// keeps matching until its turn ends. The two can decide one race
// differently (a message that the legacy rules give to a dropped queue wait
// goes to the next wait under the new ones), which is why the choice is
// pinned to the stamp. This port's legacy rules differ from duroxide
// 0.1.30's in one place: a turn that continues as new records the
// dropped-future cancellations of its waits (0.1.30 records none) and the
// carry-forward counts them out, so a message a dropped queue wait never
// read is carried rather than lost; the Go engine does so under both
// rules. The runtime's queue_race_upgrade tests pin the legacy decisions
// with fixtures this port's engine recorded before the change.
//
// Event and WorkItem marshal with encoding/json to exactly the JSON
// duroxide's serde attributes produce, so history written by a Go provider
// is readable by the Rust runtime and the other way round. Decoding rejects
// unknown tags, missing required fields and malformed JSON with an error.
// For serde_json's exact bytes call MarshalJSON directly (or use a
// json.Encoder with SetEscapeHTML(false)): json.Marshal re-escapes '<',
// '>', '&', U+2028 and U+2029, which serde_json reads back the same but
// does not write.
//
// The codec parses JSON itself, into a tree that keeps what serde decides
// on and encoding/json drops (member order, duplicate members, number
// literals). It is not shared with the emulator's JSON code, which models
// Cosmos DB's query semantics instead, and this package imports nothing of
// the project. encoding/json/v2's jsontext would replace both parsers once
// it leaves the GOEXPERIMENT.
//
// # Go conventions
//
// Every I/O method takes a context.Context first. Rust's Option<T> becomes a
// pointer (or a (value, ok) pair for lookups); Option<Duration> becomes a
// time.Duration where zero means none; Result<T, ProviderError> becomes
// (T, error) where the error is a *ProviderError matched with errors.As.
// Rust tuples returned by fetches are folded into the returned struct.
// Rust's default trait methods are helper functions.
//
// # From Rust to Go
//
//	Rust (duroxide 0.1.30)                          Go
//	providers::Provider                             Provider
//	  name / version                                Name / Version
//	  fetch_orchestration_item → (item, token, n)   FetchOrchestrationItem → *OrchestrationItem (LockToken, AttemptCount)
//	  ack_orchestration_item                        AckOrchestrationItem
//	  abandon_orchestration_item                    AbandonOrchestrationItem
//	  renew_orchestration_item_lock                 RenewOrchestrationItemLock
//	  read / read_with_execution                    Read / ReadWithExecution
//	  append_with_execution                         AppendWithExecution
//	  enqueue_for_worker                            EnqueueForWorker
//	  fetch_work_item → (item, token, n)            FetchWorkItem → *LockedWorkItem
//	  ack_work_item                                 AckWorkItem
//	  renew_work_item_lock → ()                     RenewWorkItemLock → ExecutionState (see ExecutionState)
//	  abandon_work_item                             AbandonWorkItem
//	  renew_session_lock                            RenewSessionLock
//	  cleanup_orphaned_sessions                     CleanupOrphanedSessions
//	  enqueue_for_orchestrator                      EnqueueForOrchestrator
//	  get_custom_status → Option<(Option, u64)>     GetCustomStatus → *CustomStatus
//	  get_kv_value / get_kv_all_values              GetKVValue / GetKVAllValues
//	  get_instance_stats (provider guide)           GetInstanceStats → *SystemStats
//	  as_management_capability                      AsManagementCapability (helper), ManagementCapable
//	providers::ProviderAdmin                        ProviderAdmin
//	  list_instances / list_instances_by_status     ListInstances / ListInstancesByStatus
//	  list_executions                               ListExecutions
//	  read_history_with_execution_id / read_history ReadHistoryWithExecutionID / ReadHistory
//	  latest_execution_id                           LatestExecutionID
//	  get_instance_info / get_execution_info        GetInstanceInfo / GetExecutionInfo
//	  get_system_metrics / get_queue_depths         GetSystemMetrics / GetQueueDepths
//	  list_children / get_parent_id                 ListChildren / GetParentID
//	  get_instance_tree (default method)            GetInstanceTree; helper GetInstanceTree
//	  delete_instances_atomic                       DeleteInstancesAtomic
//	  delete_instance (default method)              DeleteInstance; helper DeleteInstance
//	  delete_instance_bulk                          DeleteInstanceBulk
//	  prune_executions / prune_executions_bulk      PruneExecutions / PruneExecutionsBulk
//	providers::management::ManagementProvider       not ported (superseded by ProviderAdmin)
//	InstanceInfo, ExecutionInfo, SystemMetrics,     same names
//	QueueDepths, InstanceTree, InstanceFilter,
//	DeleteInstanceResult, PruneOptions, PruneResult
//	ProviderError::{retryable, permanent}           NewRetryableError, NewPermanentError, WrapError
//	ProviderError::to_infrastructure_error          (*ProviderError).ToInfrastructureError
//	OrchestrationItem                               OrchestrationItem
//	ExecutionMetadata                               ExecutionMetadata
//	KvEntry                                         KvEntry
//	ScheduledActivityIdentifier                     ScheduledActivityIdentifier
//	SessionFetchConfig                              SessionFetchConfig
//	TagFilter::{DefaultOnly, Tags, DefaultAnd,      TagFilterDefaultOnly (zero value), TagFilterTags,
//	  Any, None} (panics on bad input)              TagFilterDefaultAnd, TagFilterAny, TagFilterNone (errors)
//	SemverRange, semver::Version                    SemverRange, Version
//	DispatcherCapabilityFilter                      DispatcherCapabilityFilter
//	current_build_version                           CurrentBuildVersion, DuroxideVersion
//	ExecutionState::{Running, Terminal, Missing}    ExecutionState{Kind: ExecutionRunning|ExecutionTerminal|ExecutionMissing}
//	SystemStats                                     SystemStats
//	Event { .., kind: EventKind }                   Event{.., Kind EventKind}
//	EventKind::X                                    X (e.g. ActivityCompleted), wire tag EventTypeX
//	EventKind::QueueSubscribed                      QueueSubscribed ("ExternalSubscribedPersistent")
//	EventKind::QueueEventDelivered                  QueueEventDelivered ("ExternalEventPersistent")
//	EventKind::QueueSubscriptionCancelled           QueueSubscriptionCancelled ("ExternalSubscribedPersistentCancelled")
//	EventKind::ExternalSubscribed2 / ExternalEvent2 not ported (Rust test-only feature replay-version-test)
//	ErrorDetails::{Infrastructure, Configuration,   ErrorDetails{Infrastructure, Configuration,
//	  Application, Poison}                            Application, Poison} (one set)
//	ConfigErrorKind, AppErrorKind,                  ConfigErrorKind, AppErrorKind,
//	PoisonMessageType                               PoisonMessageType
//	WorkItem::X                                     XItem (e.g. ActivityExecuteItem), wire tag WorkItemX
//	WorkItem::ExternalRaised2                       not ported (Rust test-only feature replay-version-test)
//	runtime::limits::*                              MaxWorkerTags, MaxTagNameBytes, MaxKVKeys, ...
//
// ExecutionState and GetInstanceStats come from the provider implementation
// guide (microsoft/duroxide docs/provider-implementation-guide.md) rather than the
// 0.1.26 trait: duroxide 0.1.x replaced ExecutionState by lock stealing, and
// this port keeps both mechanisms (a renewal fails when the item was
// removed, and otherwise reports the orchestration's state).
package duroxide
