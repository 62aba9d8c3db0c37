import Foundation

/// One plain-text mail through the config's mail server (`mail`), the one deliveries to
/// `mailto:` use: what notifications send (reference: Notifications). Its login comes from the
/// credentials file as a delivery's does; TLS as for a `mailto:` delivery (STARTTLS required
/// with a login).
public enum Mailer {
    /// Sends `text` under `subject` to `recipients`.
    /// - Parameters:
    ///   - messageID: the Message-ID's left part (unique per notice: a server that sees it twice
    ///     may keep one).
    /// - Throws: `DeliveryMachine.Failure` saying why, and whether asking again may help.
    public static func send(to recipients: [String], subject: String, text: String, messageID: String,
                            mail: MailSettings, credentialsFile: String,
                            environment: [String: String] = ProcessInfo.processInfo.environment,
                            timeout: Duration = .seconds(60)) throws(DeliveryMachine.Failure) {
        let destination: Destination
        do throws(Destination.Problem) {
            destination = try Destination.parse("mailto:" + recipients.joined(separator: ","))
        } catch {
            throw DeliveryMachine.Failure(error.description, retryable: false)
        }
        var settings = DestinationSettings(name: "notify", destination: destination)
        settings.caFile = mail.caFile
        settings.credentials = mail.credentials
        settings.stallTimeout = timeout
        var credential: Credential?
        if let name = mail.credentials {
            do throws(CredentialStore.CredentialError) {
                credential = try CredentialStore(path: credentialsFile, environment: environment).credential(name)
            } catch {
                throw DeliveryMachine.Failure(error.description, retryable: false)
            }
        }
        let session = try CurlSession(settings: settings, credential: credential, shouldStop: { false })
        // A header holds one line: a subject is never a way to add another.
        let oneLine = subject.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
        let headers = ["From: \(mail.from)", "To: \(recipients.joined(separator: ", "))", "Subject: \(encodedWord(oneLine))",
                       "Message-ID: <\(messageID)@photofinish>", "Date: \(rfc5322Date(Date()))"]
        _ = try session.mail(mail.server, from: mail.address, recipients: recipients, headers: headers, text: text, attachments: [])
    }

    /// `text` as it may stand in a header: ASCII as it is, anything else as an RFC 2047
    /// encoded word (`=?UTF-8?B?…?=`).
    static func encodedWord(_ text: String) -> String {
        guard !text.unicodeScalars.allSatisfy({ $0.isASCII }) else { return text }
        return "=?UTF-8?B?" + Data(text.utf8).base64EncodedString() + "?="
    }

    /// `Sat, 05 Dec 2026 14:03:07 +0000`.
    static func rfc5322Date(_ date: Date) -> String {
        var t = time_t(date.timeIntervalSince1970)
        var p = tm()
        gmtime_r(&t, &p)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"], months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return String(format: "%@, %02d %@ %04d %02d:%02d:%02d +0000", days[Int(p.tm_wday)], p.tm_mday, months[Int(p.tm_mon)],
                      p.tm_year + 1900, p.tm_hour, p.tm_min, p.tm_sec)
    }
}
