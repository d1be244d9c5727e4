/// The combinations a notification's kind allows (R-KIND-1..3), checked by `validate()` at
/// acceptance and again when the worker reads a row back (one written past `push_enqueue`).
extension NotificationContent {
    /// The request fields a background push refuses (R-KIND-1: it shows nothing, so it carries only
    /// `data` and the collapse key), by their API names, in request order, with whether each is set.
    var fieldsShown: [(field: String, present: Bool)] {
        [("title", title != nil), ("body", body != nil), ("badge", badge != nil), ("sound", sound != nil),
         ("thread_id", threadId != nil),
         ("interruption_level", presentation.interruptionLevel != nil), ("relevance_score", presentation.relevanceScore != nil),
         ("category", presentation.category != nil), ("target_content_id", presentation.targetContentId != nil),
         ("critical_sound", presentation.criticalSound != nil),
         ("title_loc_key", localization.titleLocKey != nil), ("title_loc_args", localization.titleLocArgs != nil),
         ("body_loc_key", localization.bodyLocKey != nil), ("body_loc_args", localization.bodyLocArgs != nil),
         ("channel_id", channelId != nil)]
    }

    /// True for an alert with nothing to show or carry: no title or body text, no loc key, badge,
    /// sound or critical sound, and no `data` member. Its APNs payload would be `{"aps":{}}` and its
    /// FCM message neither `notification` nor `data`, yet each device would be charged, so
    /// acceptance refuses it (`SendValidation`); presentation fields, a thread id or a channel only
    /// qualify what is shown and show nothing themselves. Not part of `validate()`, which the
    /// worker also runs on rows read back: rows queued before this rule keep being sent.
    public var isEmptyAlert: Bool {
        pushType == .alert && (title ?? "").isEmpty && (body ?? "").isEmpty
            && localization.titleLocKey == nil && localization.bodyLocKey == nil
            && badge == nil && sound == nil && presentation.criticalSound == nil && (data?.members.isEmpty ?? true)
    }

    /// R-KIND-1..3 combinations:
    /// - a background push has none of the fields that show something (`fieldsShown`);
    /// - loc args need their loc key (`title_loc_args` needs `title_loc_key`, `body_loc_args` needs
    ///   `body_loc_key`);
    /// - `interruption_level` `critical` and `critical_sound` go together (Apple plays a critical
    ///   alert only with the `sound` dictionary), and `critical_sound` replaces `sound` (both are
    ///   `aps.sound`).
    /// - Throws: `PushError` `.validationError` naming the first field at fault.
    func validateKind() throws {
        if pushType == .background, let shown = fieldsShown.first(where: { $0.present }) {
            throw PushError(.validationError,
                            "\(shown.field): a background push (push_type background) carries only data and the collapse key",
                            field: shown.field)
        }
        if presentation.criticalSound != nil && sound != nil {
            throw PushError(.validationError, "critical_sound: give sound or critical_sound, not both (both are aps.sound)",
                            field: "critical_sound")
        }
        if presentation.interruptionLevel == .critical && presentation.criticalSound == nil {
            throw PushError(.validationError, "interruption_level: critical needs critical_sound (the critical-alert sound dictionary)",
                            field: "interruption_level")
        }
        if presentation.criticalSound != nil && presentation.interruptionLevel != .critical {
            throw PushError(.validationError, "critical_sound: only with interruption_level critical", field: "critical_sound")
        }
        if localization.titleLocArgs != nil && localization.titleLocKey == nil {
            throw PushError(.validationError, "title_loc_args: needs title_loc_key", field: "title_loc_args")
        }
        if localization.bodyLocArgs != nil && localization.bodyLocKey == nil {
            throw PushError(.validationError, "body_loc_args: needs body_loc_key", field: "body_loc_args")
        }
    }
}
