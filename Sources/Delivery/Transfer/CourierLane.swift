import Foundation
import Synchronization

/// One connection of a delivery's attempt: a thread of its own and the `Courier` it makes at its
/// first step (the one owner of that libcurl handle, freed on that thread when the lane closes),
/// carrying out the server steps handed to it one after another and posting what each came to.
/// An attempt writes on one lane and renames and reads back on another, so a file is verified
/// while the next one is sent (docs/reference.md, "Delivering finished photos").
final class CourierLane: Sendable {
    /// A step of the machine with what the lane needs to carry it out (copied from the journal):
    /// the file's index in the journal, the file.
    enum Step: Sendable {
        case write(Int, DeliveryJournal.File, as: String)
        case rename(Int, DeliveryJournal.File, from: String)
        case verify(Int, DeliveryJournal.File)
        case sendMessage(DeliveryJournal, link: String?)
    }

    /// What a lane posts.
    enum Message: Sendable {
        /// The effect handed out, and the event it came to (or why it failed).
        case answer(DeliveryMachine.Effect, Result<DeliveryMachine.Event, DeliveryMachine.Failure>)
        /// The lane has ended: its connection is closed.
        case closed
    }

    private let steps = Handoff<(DeliveryMachine.Effect, Step)?>()

    /// Starts the lane's thread.
    /// - Parameters:
    ///   - shouldStop: asked during transfers; true stops the one under way (it fails).
    ///   - answers: where each step's answer, and at the end `.closed`, are posted.
    ///   - credential: the login, or why it could not be read (then each step fails with it).
    init(settings: DestinationSettings, credential: Result<Credential?, DeliveryMachine.Failure>, mail: MailSettings?,
         shouldStop: @escaping @Sendable () -> Bool, answers: Handoff<Message>) {
        let steps = steps
        let thread = Thread {
            // Scoped: the courier (its connection) is gone before `.closed` is posted.
            do {
                var courier: Courier?
                while let (effect, step) = steps.take() {
                    do throws(DeliveryMachine.Failure) {
                        let server: Courier
                        if let courier {
                            server = courier
                        } else {
                            server = try Courier(settings: settings, credential: credential.get(), mail: mail, shouldStop: shouldStop)
                            courier = server
                        }
                        answers.put(.answer(effect, .success(try Self.carry(step, on: server))))
                    } catch {
                        answers.put(.answer(effect, .failure(error)))
                    }
                }
            }
            answers.put(.closed)
        }
        thread.name = "photofinish-deliver"
        thread.start()
    }

    /// Hands `effect` to the lane (it is carried out after the ones handed before it).
    func hand(_ effect: DeliveryMachine.Effect, _ step: Step) {
        steps.put((effect, step))
    }

    /// Ends the lane once the steps handed to it are carried out (`.closed` says when).
    func close() {
        steps.put(nil)
    }

    private static func carry(_ step: Step, on courier: Courier) throws(DeliveryMachine.Failure) -> DeliveryMachine.Event {
        switch step {
        case .write(let i, let file, let name):
            try courier.write(file, as: name)
            return .written(i)
        case .rename(let i, let file, let from):
            try courier.rename(file, from: from)
            return .renamed(i)
        case .verify(let i, let file):
            switch try courier.verify(file) {
            case .same(let how): return .verified(i, how)
            case .different(let detail): return .mismatch(i, detail)
            }
        case .sendMessage(let journal, let link):
            try courier.sendMessage(journal, link: link)
            return .messageAccepted
        }
    }
}

/// Values handed from threads to one that waits for them, taken in the order they were put.
final class Handoff<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    private let bell = NSCondition()

    func put(_ value: Value) {
        values.withLock { $0.append(value) }
        bell.lock()
        bell.signal()
        bell.unlock()
    }

    /// The first value put and not taken yet, waiting for one.
    func take() -> Value {
        bell.lock()
        defer { bell.unlock() }
        while true {
            if let value = values.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return value }
            bell.wait()
        }
    }
}

/// A yes once set, seen by every thread.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
